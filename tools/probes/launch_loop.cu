// launch() against cudaGraphLaunch in a loop long enough for a sampling profiler (perf record)
// to say where launch()'s extra host time goes (issue 34: +0.28 us, target +0.2).
//   nvcc -std=c++20 -O2 -arch=sm_90 -cudart shared -Iinclude -IBUILD/include
//        tools/probes/launch_loop.cu -o launch_loop -LBUILD/lib -lcmdgraph
//        -Xlinker -rpath -Xlinker BUILD/lib
//   launch_loop [raw|ours|both] [ROUNDS]
// One empty kernel. A round launches 32 times back to back, timed, then waits for the stream,
// so that CUDA's queue never fills and a launch never waits for the device. `both` alternates
// the two by round and prints the median ns a call of each and their difference; `raw` or
// `ours` runs one alone (what a profiler is pointed at).
#include <cmdgraph/cmdgraph.hpp>

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "probe.hpp"

using namespace cmdgraph;

namespace {

__global__ void empty() {}

constexpr int per_round = 32;

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "both";
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 2000;
  const Device gpu = Device::cuda(0);
  Queue q(gpu);
  cudaStream_t stream = q.native_handle();

  cudaGraph_t graph;
  CHECK(cudaGraphCreate(&graph, 0));
  cudaKernelNodeParams params{};
  params.func = reinterpret_cast<void*>(&empty);
  params.gridDim = dim3(1);
  params.blockDim = dim3(1);
  cudaGraphNode_t node;
  CHECK(cudaGraphAddKernelNode(&node, graph, nullptr, 0, &params));
  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, graph, 0));

  CommandBuffer cmd("one kernel");
  cmd.launch(&empty, LaunchConfig{{1}, {1}});
  Executable exe = compile(cmd, gpu, {.backend = Backend::cuda_graph});

  auto raw_round = [&] {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < per_round; ++i) CHECK(cudaGraphLaunch(exec, stream));
    const auto end = std::chrono::steady_clock::now();
    CHECK(cudaStreamSynchronize(stream));
    return std::chrono::duration<double, std::nano>(end - start).count() / per_round;
  };
  auto our_round = [&] {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < per_round; ++i) exe.launch(q);
    const auto end = std::chrono::steady_clock::now();
    q.wait();
    return std::chrono::duration<double, std::nano>(end - start).count() / per_round;
  };
  std::vector<double> raw, ours, pairs;
  for (int r = 0; r < rounds; ++r) {
    if (mode == "raw") {
      raw.push_back(raw_round());
    } else if (mode == "ours") {
      ours.push_back(our_round());
    } else {
      // Whichever comes second may find the host warmer: take turns.
      const double a = r % 2 ? our_round() : raw_round();
      const double b = r % 2 ? raw_round() : our_round();
      raw.push_back(r % 2 ? b : a);
      ours.push_back(r % 2 ? a : b);
      pairs.push_back(ours.back() - raw.back());
    }
  }
  if (!raw.empty()) std::printf("cudaGraphLaunch: %.1f ns a call (median of %zu rounds)\n",
                                probe::median(raw), raw.size());
  if (!ours.empty()) std::printf("launch():        %.1f ns a call (median of %zu rounds)\n",
                                 probe::median(ours), ours.size());
  if (!pairs.empty()) std::printf("launch() - cudaGraphLaunch: %+.1f ns (median of pairs)\n",
                                  probe::median(pairs));
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  return 0;
}
