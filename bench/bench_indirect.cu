// Indirect commands (issue 35) against raw CUDA in the same process, alternating trials:
// (1) what sizing on the device costs per command: a chain of launch_indirect commands against
//     a hand-built graph of the same kernels at fixed grids (and cmdgraph's own fixed-grid
//     chain), replayed;
// (2) what it saves: a loop whose every step sizes its work from a count the step before
//     computed, as one launch (loop_while over a parallel_for_indirect) against raw CUDA on a
//     stream reading the count back to the host every step;
// (3) enabling a command on the device: a chain of launch_if commands against the same chain
//     of if_then around each kernel, both with the flag set and not.
#include "bench_support.cuh"

#include <cmdgraph/cmdgraph.hpp>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

using namespace cmdgraph;

namespace {

constexpr int chain = 200;         // commands per replay in (1)
constexpr unsigned blocks = 64;    // the grid every command of (1) runs
constexpr unsigned steps = 100;    // steps of the loop in (2)
constexpr unsigned most = 65536;   // the largest count a step of (2) may ask for
constexpr int trials = 15;

__global__ void touch(int* out) {
  if (threadIdx.x == 0) out[blockIdx.x] += 1;
}

// (1) raw: `chain` kernels at a fixed grid, one after another.
cudaGraphExec_t raw_chain(int* out) {
  cudaGraph_t g;
  BENCH_CUDA(cudaGraphCreate(&g, 0));
  cudaGraphNode_t last = nullptr;
  for (int i = 0; i < chain; ++i) {
    void* args[] = {&out};
    cudaKernelNodeParams p{};
    p.func = reinterpret_cast<void*>(&touch);
    p.gridDim = dim3(blocks);
    p.blockDim = dim3(32);
    p.kernelParams = args;
    cudaGraphNode_t node;
    BENCH_CUDA(cudaGraphAddKernelNode(&node, g, last ? &last : nullptr, last ? 1 : 0, &p));
    last = node;
  }
  cudaGraphExec_t exec;
  BENCH_CUDA(cudaGraphInstantiate(&exec, g, 0));
  BENCH_CUDA(cudaGraphDestroy(g));
  return exec;
}

// (2): the count of step s, computed on the device from the step number.
__host__ __device__ unsigned count_of(unsigned step) { return (step * 7919u) % most + 1; }

struct Step {  // one thread: the next step's count, and the step advanced
  unsigned* step;
  unsigned* count;
  __host__ __device__ void operator()(std::size_t) const {
    *count = count_of(*step);
    *step += 1;
  }
};
struct Work {  // what a step's count sizes
  float* data;
  __host__ __device__ void operator()(std::size_t i) const { data[i] += 1.0f; }
};
struct Steps {
  const unsigned* step;
  __host__ __device__ bool operator()() const { return *step < steps; }
};

struct FlagSet {  // (3): if_then's condition, the flag launch_if reads
  const std::uint32_t* flag;
  __host__ __device__ bool operator()() const { return *flag != 0; }
};

__global__ void raw_step(unsigned step, unsigned* count) { *count = count_of(step); }
__global__ void raw_work(float* data, unsigned n) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] += 1.0f;
}

}  // namespace

int main() {
  if (bench::no_gpu("bench_indirect")) return 0;
  const Device gpu = Device::cuda(0);
  Queue queue(gpu);
  const cudaStream_t stream = queue.native_handle();

  // (1) Sizing on the device, per command.
  Buffer<int> out(gpu, blocks);
  Buffer<DispatchSize> grid(gpu, 1);
  const DispatchSize size{blocks, 1, 1};
  BENCH_CUDA(cudaMemcpy(grid.data(), &size, sizeof size, cudaMemcpyHostToDevice));
  cudaGraphExec_t raw = raw_chain(out.data());
  CommandBuffer indirect("indirect chain"), fixed("fixed chain");
  Command before_i, before_f;
  for (int i = 0; i < chain; ++i) {
    Command c = indirect.launch_indirect(&touch, grid, LaunchConfig{{blocks}, {32}}, out.data());
    Command f = fixed.launch(&touch, LaunchConfig{{blocks}, {32}}, out.data());
    if (i > 0) {
      c.after(before_i);
      f.after(before_f);
    }
    before_i = c;
    before_f = f;
  }
  Executable ours_indirect = compile(indirect, gpu), ours_fixed = compile(fixed, gpu);
  std::vector<double> t_raw, t_indirect, t_fixed;
  for (int t = 0; t < trials; ++t) {
    t_raw.push_back(bench::device_us(stream, [&] { BENCH_CUDA(cudaGraphLaunch(raw, stream)); }));
    t_indirect.push_back(bench::device_us(stream, [&] { ours_indirect.launch(queue); }));
    t_fixed.push_back(bench::device_us(stream, [&] { ours_fixed.launch(queue); }));
  }
  bench::header("indirect dispatch: a chain of 200 kernels of 64 blocks, replayed (median of 15)");
  bench::row("replay, fixed grids (cmdgraph launch)", bench::median(t_raw),
             bench::median(t_fixed), "us", "");
  bench::row("replay, grids read on the device (launch_indirect)", bench::median(t_raw),
             bench::median(t_indirect), "us", "");
  std::printf("%-52s %12.2f us per command over the raw fixed grid (target <= 3)\n",
              "launch_indirect's cost",
              (bench::median(t_indirect) - bench::median(t_raw)) / chain);

  // (3) A command the device enables or not: launch_if against if_then around the kernel.
  Buffer<std::uint32_t> flag(gpu, 1);
  CommandBuffer switched("launch_if chain"), conditional("if_then chain");
  std::vector<CommandBuffer> bodies;
  bodies.reserve(chain);
  for (int i = 0; i < chain; ++i) {
    Command c = switched.launch_if(&touch, flag, LaunchConfig{{blocks}, {32}}, out.data());
    bodies.emplace_back("body");
    bodies.back().launch(&touch, LaunchConfig{{blocks}, {32}}, out.data());
    Command f = conditional.if_then(FlagSet{flag.data()}, bodies.back());
    if (i > 0) {
      c.after(before_i);
      f.after(before_f);
    }
    before_i = c;
    before_f = f;
  }
  Executable ours_switched = compile(switched, gpu), ours_conditional = compile(conditional, gpu);
  bench::header("a chain of 200 kernels the device enables or not, replayed (median of 15)");
  for (std::uint32_t on : {1u, 0u}) {
    BENCH_CUDA(cudaMemcpy(flag.data(), &on, sizeof on, cudaMemcpyHostToDevice));
    std::vector<double> t_fixed_again, t_switched, t_conditional;
    for (int t = 0; t < trials; ++t) {
      t_fixed_again.push_back(
          bench::device_us(stream, [&] { BENCH_CUDA(cudaGraphLaunch(raw, stream)); }));
      t_switched.push_back(bench::device_us(stream, [&] { ours_switched.launch(queue); }));
      t_conditional.push_back(bench::device_us(stream, [&] { ours_conditional.launch(queue); }));
    }
    const char* state = on ? "enabled" : "disabled";
    bench::row(std::string(state) + ": launch_if over raw fixed grids",
               bench::median(t_fixed_again), bench::median(t_switched), "us", "");
    bench::row(std::string(state) + ": if_then over raw fixed grids",
               bench::median(t_fixed_again), bench::median(t_conditional), "us", "");
    std::printf("%-52s %12.3fx (target < 1: cheaper than a one-branch conditional)\n",
                (std::string(state) + ": launch_if / if_then").c_str(),
                bench::median(t_switched) / bench::median(t_conditional));
  }

  // (2) A data-dependent loop: one launch, against the count read back every step.
  Buffer<float> data(gpu, most);
  Buffer<unsigned> step(gpu, 1), count(gpu, 1);
  CommandBuffer body("step");
  auto next = body.parallel_for(1, Step{step.data(), count.data()});
  body.parallel_for_indirect(count, most, Work{data.data()}).after(next);
  CommandBuffer loop("loop");
  auto restart = loop.fill(step, 0u, 1);
  loop.loop_while(body, Steps{step.data()}).after(restart);
  Executable one_launch = compile(loop, gpu);
  unsigned* count_on_host = nullptr;
  BENCH_CUDA(cudaMallocHost(&count_on_host, sizeof(unsigned)));
  auto round_trips = [&] {
    for (unsigned s = 0; s < steps; ++s) {
      raw_step<<<1, 1, 0, stream>>>(s, count.data());
      BENCH_CUDA(cudaMemcpyAsync(count_on_host, count.data(), sizeof(unsigned),
                                 cudaMemcpyDeviceToHost, stream));
      BENCH_CUDA(cudaStreamSynchronize(stream));  // the host needs the size
      raw_work<<<(*count_on_host + 255) / 256, 256, 0, stream>>>(data.data(), *count_on_host);
    }
  };
  std::vector<double> t_trips, t_loop;
  for (int t = 0; t < trials; ++t) {
    t_trips.push_back(bench::host_us([&] {
      round_trips();
      BENCH_CUDA(cudaStreamSynchronize(stream));
    }));
    t_loop.push_back(bench::host_us([&] { one_launch.launch(queue).wait(); }));
  }
  bench::header("a loop of 100 steps, each sized by the step before (median of 15, host wall)");
  bench::row("per step: count read back on the host / one launch", bench::median(t_trips) / steps,
             bench::median(t_loop) / steps, "us", "");
  BENCH_CUDA(cudaFreeHost(count_on_host));
  BENCH_CUDA(cudaGraphExecDestroy(raw));
  return 0;
}
