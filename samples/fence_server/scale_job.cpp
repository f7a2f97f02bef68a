// ScaleJob's recording. In CUDA builds nvcc compiles this file (as a copy named .cu), so the
// parallel_for gets a GPU version; the Asio server in fence_server.cpp is ordinary host code.
#include "scale_job.hpp"

#include <numeric>

using namespace cmdgraph;

namespace {

struct Ramp {
  std::int64_t* out;
  std::int64_t factor;
  CMDGRAPH_HOST_DEVICE void operator()(std::size_t i) const {
    out[i] = factor * static_cast<std::int64_t>(i);
  }
};

}  // namespace

struct ScaleJob::State {
  State(Device device, std::size_t n) : ramp(device, n), host(n) {
    CommandBuffer cmd("scale");
    compute = cmd.parallel_for(n, Ramp{ramp.data(), 0}).named("ramp");
    cmd.copy(host, ramp, n).after(compute).named("copy out");
    exe = compile(cmd, device);
  }
  Buffer<std::int64_t> ramp;
  HostBuffer<std::int64_t> host;
  ParallelForCommand<Ramp> compute;
  Executable exe;
};

ScaleJob::ScaleJob(Device device, std::size_t size)
    : state_(std::make_unique<State>(device, size)) {}
ScaleJob::ScaleJob(ScaleJob&&) noexcept = default;
ScaleJob::~ScaleJob() = default;

Fence ScaleJob::launch(Queue& queue, std::int64_t factor) {
  state_->exe.update(state_->compute, Ramp{state_->ramp.data(), factor});
  return state_->exe.launch(queue);
}

std::int64_t ScaleJob::sum() const {
  return std::accumulate(state_->host.begin(), state_->host.end(), std::int64_t{0});
}

std::int64_t ScaleJob::expected(std::int64_t factor) const {
  const auto n = static_cast<std::int64_t>(state_->host.size());
  return factor * n * (n - 1) / 2;
}

const Executable& ScaleJob::executable() const { return state_->exe; }
