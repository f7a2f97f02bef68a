// Data-parallel training, the shape of it: every GPU holds a replica of the model and its own
// data; one step computes a local gradient, sums the gradients of every GPU (an NCCL
// all-reduce) and applies the same update on every replica. The step is recorded once per GPU
// and replayed; one process drives every visible GPU, one communicator rank and one host
// thread per GPU (as NCCL asks of a process with several GPUs), or a single-rank communicator
// on one GPU. The model here is least squares: replica w moves towards the mean of every rank's
// target, so after enough steps w[i] is the mean over ranks of target_r[i] (the all-reduced
// sum over the rank count), and every replica holds exactly the same w.
// [--elements N] [--steps N]
#include "sample.hpp"

#include <cmath>
#include <cstdio>
#include <thread>
#include <vector>

using namespace cmdgraph;

namespace {

constexpr float learning_rate = 0.5f;

// Rank r's data: target_r[i], a multiple of 1/128 in [0, 8).
CMDGRAPH_HOST_DEVICE inline float target(int rank, std::size_t n, std::size_t i) {
  return 8.0f * sample::unit_value(static_cast<std::uint64_t>(rank) * n + i);
}

// The local gradient of 1/2 (w - target)^2.
struct Gradient {
  const float* w;
  float* g;
  std::size_t n;
  int rank;
  __host__ __device__ void operator()(std::size_t i) const { g[i] = w[i] - target(rank, n, i); }
};

// w -= rate * (summed gradient) / ranks: the same step on every replica.
struct Update {
  float* w;
  const float* g;
  float scale;
  __host__ __device__ void operator()(std::size_t i) const { w[i] -= scale * g[i]; }
};

struct RankResult {
  std::vector<float> w;
  double step_us = 0;
};

// One rank: its replica and data, its step recorded once, replayed `steps` times.
RankResult train(const Communicator& comm, std::size_t n, int steps) {
  const Device gpu = comm.device();
  Buffer<float> w(gpu, n), g(gpu, n);
  CommandBuffer init("init");
  init.fill(w, 0.0f, n);
  Queue queue(gpu);
  compile(init, gpu).launch(queue).wait();

  CommandBuffer step("step, rank " + std::to_string(comm.rank()));
  auto gradient = step.parallel_for(n, Gradient{w.data(), g.data(), n, comm.rank()})
                      .named("gradient").reads(w, "w").writes(g, "g");
  auto sum = step.all_reduce(comm, g, g, n, ReduceOp::sum).named("sum gradients").after(gradient);
  step.parallel_for(n, Update{w.data(), g.data(), learning_rate / float(comm.size())})
      .named("update").reads(g, "g").reads_writes(w, "w").after(sum);
  Executable exe = compile(step, gpu);  // declared access checked against the edges

  exe.launch(queue).wait();  // warm-up: first-use costs
  const sample::Stopwatch clock;
  for (int s = 1; s < steps; ++s) exe.launch(queue);
  queue.wait();
  RankResult r;
  r.step_us = clock.ms() * 1000.0 / std::max(1, steps - 1);
  r.w.resize(n);
  CommandBuffer read("read back");
  read.copy(host_view(r.w.data(), n), w, n);
  compile(read, gpu).launch(queue).wait();
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  sample::gpu_or_skip("allreduce");
  const std::size_t n = sample::flag(argc, argv, "--elements", std::size_t{1} << 20);
  const int steps = static_cast<int>(sample::flag(argc, argv, "--steps", 100));
  const int ranks = Device::count();
  std::vector<Device> gpus;
  for (int d = 0; d < ranks; ++d) gpus.push_back(Device::cuda(d));
  std::printf("allreduce: %d rank(s), one per GPU (%s), %zu parameters, %d steps\n", ranks,
              gpus[0].properties().name.c_str(), n, steps);

  std::vector<Communicator> comms = Communicator::all(gpus);
  std::vector<RankResult> results(ranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] { results[r] = train(comms[r], n, steps); });
  }
  for (auto& t : threads) t.join();

  // Every replica is the same, and each is the mean of every rank's target (the sums the
  // all-reduce made, over the rank count): w_k = (1 - 0.5^k) * mean.
  bool ok = true;
  double worst = 0;
  const double remaining = std::pow(1.0 - learning_rate, steps);
  for (std::size_t i = 0; i < n; ++i) {
    double mean = 0;
    for (int r = 0; r < ranks; ++r) mean += target(r, n, i);
    mean /= ranks;
    const double want = (1.0 - remaining) * mean;
    worst = std::max(worst, std::abs(double(results[0].w[i]) - want));
    for (int r = 1; r < ranks; ++r) ok &= results[r].w[i] == results[0].w[i];
  }
  if (!ok) std::printf("  replicas differ\n");
  ok &= worst < 1e-4;
  for (int r = 0; r < ranks; ++r) {
    std::printf("  rank %d on cuda:%d: %.1f us per step (gradient, all-reduce, update)\n", r,
                comms[r].device().ordinal(), results[r].step_us);
  }
  std::printf("  largest difference from the mean of the targets: %.2e\n", worst);
  return sample::verdict("allreduce", ok);
}
