// Shared pieces of the benchmarks: checked raw CUDA, timers, medians, the table printer.
#pragma once

#include <cmdgraph/device.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#define BENCH_CUDA(call)                                                                  \
  do {                                                                                    \
    const cudaError_t status_ = (call);                                                   \
    if (status_ != cudaSuccess) {                                                         \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,                  \
                   cudaGetErrorString(status_));                                          \
      std::exit(1);                                                                       \
    }                                                                                     \
  } while (0)

namespace bench {

__global__ void empty_kernel(int) {}

/// True, after saying so, when there is no CUDA device to measure on.
inline bool no_gpu(const char* bench_name) {
  if (cmdgraph::Device::count() > 0) return false;
  std::printf("%s: no CUDA device, nothing to measure\n", bench_name);
  return true;
}

/// A one-thread kernel node running `kernel` with `args` (pointers to its arguments, whose
/// values CUDA copies when the node is made).
template <class... P>
cudaKernelNodeParams one_thread_node(void (*kernel)(P...), void** args) {
  cudaKernelNodeParams p{};
  p.func = reinterpret_cast<void*>(kernel);
  p.gridDim = dim3(1);
  p.blockDim = dim3(1);
  p.kernelParams = args;
  return p;
}

/// A chain of `n` one-thread nodes of `kernel` added to `g`, node i with the arguments
/// `arguments(i)` returns (a std::tuple of the parameters); the nodes in order.
template <class... P, class Arguments>
std::vector<cudaGraphNode_t> kernel_chain(cudaGraph_t g, void (*kernel)(P...), int n,
                                          Arguments arguments) {
  std::vector<cudaGraphNode_t> nodes;
  for (int i = 0; i < n; ++i) {
    std::tuple<P...> values = arguments(i);
    std::apply(
        [&](auto&... v) {
          void* args[] = {&v...};
          const cudaKernelNodeParams p = one_thread_node(kernel, args);
          cudaGraphNode_t node;
          BENCH_CUDA(cudaGraphAddKernelNode(&node, g, nodes.empty() ? nullptr : &nodes.back(),
                                            nodes.empty() ? 0 : 1, &p));
          nodes.push_back(node);
        },
        values);
  }
  return nodes;
}

/// What `enqueue` enqueues on `s`, captured and instantiated, its upload started.
inline cudaGraphExec_t captured(cudaStream_t s, const std::function<void()>& enqueue) {
  BENCH_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  enqueue();
  cudaGraph_t g;
  BENCH_CUDA(cudaStreamEndCapture(s, &g));
  cudaGraphExec_t exec;
  BENCH_CUDA(cudaGraphInstantiate(&exec, g, 0));
  BENCH_CUDA(cudaGraphUpload(exec, s));
  BENCH_CUDA(cudaGraphDestroy(g));
  return exec;
}

/// A DAG as each vertex's parents, all earlier vertices.
using Parents = std::vector<std::vector<int>>;

/// Each vertex after 1-3 parents among all earlier vertices (fixed seed).
inline Parents random_dag(int n) {
  std::mt19937 rng(7);
  Parents parents(n);
  for (int v = 1; v < n; ++v) {
    std::set<int> ps;
    for (int k = 1 + static_cast<int>(rng() % 3); k > 0; --k) {
      ps.insert(static_cast<int>(rng() % v));
    }
    parents[v].assign(ps.begin(), ps.end());
  }
  return parents;
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// Host wall time of `fn` in microseconds.
inline double host_us(const std::function<void()>& fn) {
  const auto t0 = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
}

/// Device time in microseconds between events around `fn` enqueuing on `stream`.
inline double device_us(cudaStream_t stream, const std::function<void()>& fn) {
  cudaEvent_t a, b;
  BENCH_CUDA(cudaEventCreate(&a));
  BENCH_CUDA(cudaEventCreate(&b));
  BENCH_CUDA(cudaEventRecord(a, stream));
  fn();
  BENCH_CUDA(cudaEventRecord(b, stream));
  BENCH_CUDA(cudaEventSynchronize(b));
  float ms = 0;
  BENCH_CUDA(cudaEventElapsedTime(&ms, a, b));
  BENCH_CUDA(cudaEventDestroy(a));
  BENCH_CUDA(cudaEventDestroy(b));
  return ms * 1000.0;
}

/// One line of the results table: what, raw CUDA, ours, ratio, target.
inline void row(const std::string& what, double raw, double ours, const std::string& unit,
                const std::string& target) {
  std::printf("%-52s %12.2f %12.2f %-5s %7.3fx  %s\n", what.c_str(), raw, ours, unit.c_str(),
              ours / raw, target.c_str());
}

inline void header(const char* title) {
  std::printf("\n== %s\n%-52s %12s %12s %-5s %8s  %s\n", title, "measure", "raw CUDA", "cmdgraph",
              "", "ratio", "target");
}

}  // namespace bench
