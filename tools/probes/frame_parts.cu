// Where an unchanged frame's host time goes on each backend (issue 33, item 1): a chain of
// 1,000 one-thread kernels of parameters (int, int, int*) recorded anew with the values the
// executable holds, then given to update(). Per command, medians of 15 trials taking turns:
//   record:  the recording (launch + after for each kernel) into a fresh CommandBuffer;
//   update:  exe.update(that buffer), nothing changed;
//   destroy: the buffer's destruction after the update.
// The recording alone, with no executable, is the row the CPU machine measures too
// (bench_frames_host records parallel_for commands on the host backend instead).
//   nvcc -std=c++20 -O2 -arch=sm_90 -cudart shared -Iinclude -IBUILD/include
//        tools/probes/frame_parts.cu -o probe -LBUILD/lib -lcmdgraph
//        -Xlinker -rpath -Xlinker BUILD/lib
#include <cmdgraph/cmdgraph.hpp>

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <vector>

#include "probe.hpp"

using namespace cmdgraph;

namespace {

__global__ void store(int i, int value, int* out) { out[i] = value; }

constexpr int n = 1000, trials = 15;

using Clock = std::chrono::steady_clock;
double ns_per_command(Clock::time_point start) {
  return std::chrono::duration<double, std::nano>(Clock::now() - start).count() / n;
}

__attribute__((noinline)) void record(CommandBuffer& cmd, int* out) {
  Command previous;
  for (int i = 0; i < n; ++i) {
    auto k = cmd.launch(&store, LaunchConfig{{1}, {1}}, i, 7 * i, out);
    if (i) k.after(previous);
    previous = k;
  }
}

struct Parts {
  const char* name;
  std::optional<Executable> exe;
  std::vector<double> record, update, destroy;
};

}  // namespace

int main() {
  const Device gpu = Device::cuda(0);
  int* out = nullptr;
  if (cudaMalloc(&out, sizeof(int) * n) != cudaSuccess) return 1;
  Parts ways[] = {{"cuda_graph"}, {"streams"}, {"recording alone"}};
  for (Parts* way : {&ways[0], &ways[1]}) {
    CommandBuffer first("frame");
    record(first, out);
    way->exe = compile(first, gpu,
                       {.backend = way == &ways[0] ? Backend::cuda_graph : Backend::streams});
  }
  for (int t = 0; t < trials; ++t) {
    for (Parts& way : ways) {
      std::optional<CommandBuffer> cmd(std::in_place, "frame");
      auto start = Clock::now();
      record(*cmd, out);
      way.record.push_back(ns_per_command(start));
      if (way.exe) {
        start = Clock::now();
        const UpdateResult r = way.exe->update(*cmd);
        way.update.push_back(ns_per_command(start));
        if (r.commands_changed != 0 || r.reinstantiated) {
          std::fprintf(stderr, "%s: %zu commands changed\n", way.name, r.commands_changed);
          return 1;
        }
      }
      start = Clock::now();
      cmd.reset();
      way.destroy.push_back(ns_per_command(start));
    }
  }
  std::printf("an unchanged frame of %d kernels, ns per command, medians of %d\n", n, trials);
  std::printf("%-18s %8s %8s %8s %8s\n", "way", "record", "update", "destroy", "total");
  for (const Parts& way : ways) {
    const double u = way.update.empty() ? 0.0 : probe::median(way.update);
    const double total = probe::median(way.record) + u + probe::median(way.destroy);
    std::printf("%-18s %8.1f %8.1f %8.1f %8.1f\n", way.name, probe::median(way.record), u,
                probe::median(way.destroy), total);
  }
  return cudaFree(out) == cudaSuccess ? 0 : 1;
}
