// Chains of 1,000 kernels joined by full and by programmatic edges, cmdgraph on both CUDA
// backends against the same chains by hand in the same process, alternating trials: a graph
// captured from cudaLaunchKernelEx with and without programmatic stream serialization, and the
// launches issued straight onto a stream.
#include "bench_support.cuh"

#include <cmdgraph/cmdgraph.hpp>

#include <cstdio>
#include <string>
#include <vector>

using namespace cmdgraph;

namespace {

constexpr int chain = 1000;
constexpr int trials = 15;

// One link of a chain: waits for the link before it, lets the next one launch, then works.
__global__ void link(long long cycles) {
  cudaGridDependencySynchronize();
  cudaTriggerProgrammaticLaunchCompletion();
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

void launch_link(dim3 grid, long long cycles, bool programmatic, cudaStream_t stream) {
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = dim3(128);
  config.stream = stream;
  config.attrs = &attr;
  config.numAttrs = programmatic ? 1 : 0;
  BENCH_CUDA(cudaLaunchKernelEx(&config, &link, cycles));
}

// The chain captured from a stream, as a careful hand would build it.
cudaGraphExec_t captured_chain(dim3 grid, long long cycles, bool programmatic, cudaStream_t s) {
  return bench::captured(s, [&] {
    for (int i = 0; i < chain; ++i) launch_link(grid, cycles, programmatic, s);
  });
}

Executable our_chain(dim3 grid, long long cycles, bool programmatic, Backend backend) {
  CommandBuffer cmd("chain");
  KernelCommand<long long> last;
  for (int i = 0; i < chain; ++i) {
    auto k = cmd.launch(&link, LaunchConfig{{grid.x}, {128}}, cycles);
    if (programmatic) k.programmatic_safe();
    if (i > 0) k.after(last);
    last = k;
  }
  return compile(cmd, Device::cuda(0), {.backend = backend});
}

struct Shape {
  const char* name;
  long long cycles;
};

}  // namespace

int main() {
  if (bench::no_gpu("bench_programmatic")) return 0;
  const Device gpu = Device::cuda(0);
  const unsigned sms = static_cast<unsigned>(gpu.properties().multiprocessors);
  Queue queue(gpu);
  cudaStream_t s = queue.native_handle();
  // About 1, 2 and 10 us at the H200's ~1.98 GHz.
  const Shape shapes[] = {{"empty", 0}, {"~1 us", 2'000}, {"~2 us", 4'000}, {"~10 us", 20'000}};
  std::printf("bench_programmatic: chains of %d kernels, medians of %d trials, device time per "
              "launch in us\n", chain, trials);
  for (const unsigned blocks : {1u, sms}) {
    for (const Shape& shape : shapes) {
      const dim3 grid(blocks);
      cudaGraphExec_t raw_full = captured_chain(grid, shape.cycles, false, s);
      cudaGraphExec_t raw_early = captured_chain(grid, shape.cycles, true, s);
      Executable graph_full = our_chain(grid, shape.cycles, false, Backend::cuda_graph);
      Executable graph_early = our_chain(grid, shape.cycles, true, Backend::cuda_graph);
      Executable streams_early = our_chain(grid, shape.cycles, true, Backend::streams);
      if (graph_early.stats().edges_programmatic != chain - 1 ||
          streams_early.stats().edges_programmatic != chain - 1) {
        std::printf("programmatic edges lowered: %zu (graph), %zu (streams), expected %d\n",
                    graph_early.stats().edges_programmatic,
                    streams_early.stats().edges_programmatic, chain - 1);
        return 1;
      }
      std::vector<double> t[8];
      for (int trial = 0; trial < trials + 1; ++trial) {  // the first is a warm-up
        double v[8];
        v[0] = bench::device_us(s, [&] { BENCH_CUDA(cudaGraphLaunch(raw_full, s)); });
        v[1] = bench::device_us(s, [&] { graph_full.launch(queue); });
        v[2] = bench::device_us(s, [&] { BENCH_CUDA(cudaGraphLaunch(raw_early, s)); });
        v[3] = bench::device_us(s, [&] { graph_early.launch(queue); });
        v[4] = bench::device_us(s, [&] {
          for (int i = 0; i < chain; ++i) launch_link(grid, shape.cycles, true, s);
        });
        v[5] = bench::device_us(s, [&] { streams_early.launch(queue); });
        // The host's share of the streams rows: enqueueing alone, the device drained between.
        v[6] = bench::host_us([&] {
          for (int i = 0; i < chain; ++i) launch_link(grid, shape.cycles, true, s);
        });
        queue.wait();
        v[7] = bench::host_us([&] { streams_early.launch(queue); });
        queue.wait();
        if (trial > 0) {
          for (int i = 0; i < 8; ++i) t[i].push_back(v[i]);
        }
      }
      queue.wait();
      const std::string what = std::string(shape.name) + ", " + std::to_string(blocks) +
                               (blocks == 1 ? " block" : " blocks");
      bench::header(what.c_str());
      bench::row("graph, full edges", bench::median(t[0]), bench::median(t[1]), "us", "");
      bench::row("graph, programmatic edges", bench::median(t[2]), bench::median(t[3]), "us",
                 "<= 1.02x");
      bench::row("streams, programmatic launches", bench::median(t[4]), bench::median(t[5]),
                 "us", "<= 1.02x");
      bench::row("streams, host enqueue alone", bench::median(t[6]), bench::median(t[7]), "us",
                 "");
      std::printf("  cmdgraph graph: programmatic edges %.3fx faster than full (hand: %.3fx)\n",
                  bench::median(t[1]) / bench::median(t[3]),
                  bench::median(t[0]) / bench::median(t[2]));
      BENCH_CUDA(cudaGraphExecDestroy(raw_full));
      BENCH_CUDA(cudaGraphExecDestroy(raw_early));
    }
  }
  return 0;
}
