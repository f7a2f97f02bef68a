// child_node_set.cu -- standalone probe: can a graph executable's kernel node that lies inside a
// child graph node be set by itself (cudaGraphExecKernelNodeSetParams with the node of the
// graph embedded in the parent, cudaGraphChildGraphNodeGetGraph), and what does it cost against
// setting the whole child node (cudaGraphExecChildGraphNodeSetParams) and a whole-graph
// cudaGraphExecUpdate? The question behind an update of executed buffers command by command
// (issue 33: a primary running 8 bodies of 1,000 kernels took ~13 ms to update as a whole).
//
// Build: nvcc -std=c++20 -O2 -arch=sm_90 tools/probes/child_node_set.cu -o probe
// Output: the answer, then host µs of each way for a child of 1,000 kernels (medians of 9).
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "probe.hpp"

#define CK(call)                                                                        \
  do {                                                                                  \
    const cudaError_t e_ = (call);                                                      \
    if (e_ != cudaSuccess) {                                                            \
      std::printf("%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      std::exit(1);                                                                     \
    }                                                                                   \
  } while (0)

__global__ void store(int* out, int i, int v) { out[i] = v; }

namespace {

constexpr int n = 1000;

// The parameters of a one-thread `store` whose arguments lie at `args`.
cudaKernelNodeParams store_node(void** args) {
  cudaKernelNodeParams p{};
  p.func = reinterpret_cast<void*>(&store);
  p.gridDim = dim3(1);
  p.blockDim = dim3(1);
  p.kernelParams = args;
  return p;
}

// A chain of n kernels, kernel i storing `value + i` at out[i].
cudaGraph_t chain(int* out, int value) {
  cudaGraph_t g;
  CK(cudaGraphCreate(&g, 0));
  cudaGraphNode_t prev = nullptr;
  for (int i = 0; i < n; ++i) {
    int v = value + i;
    void* args[] = {&out, &i, &v};
    const cudaKernelNodeParams p = store_node(args);
    cudaGraphNode_t node;
    CK(cudaGraphAddKernelNode(&node, g, prev ? &prev : nullptr, prev ? 1 : 0, &p));
    prev = node;
  }
  return g;
}

template <class F>
double host_us(F&& f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
      .count();
}

bool holds(int* out, int value, cudaStream_t s) {
  std::vector<int> h(n);
  CK(cudaStreamSynchronize(s));
  CK(cudaMemcpy(h.data(), out, n * sizeof(int), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) {
    if (h[i] != value + i) return false;
  }
  return true;
}

}  // namespace

int main() {
  int* out;
  CK(cudaMalloc(&out, n * sizeof(int)));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaGraph_t child = chain(out, 0);
  cudaGraph_t parent;
  CK(cudaGraphCreate(&parent, 0));
  cudaGraphNode_t child_node;
  CK(cudaGraphAddChildGraphNode(&child_node, parent, nullptr, 0, child));
  cudaGraph_t embedded;
  CK(cudaGraphChildGraphNodeGetGraph(child_node, &embedded));
  std::size_t count = 0;
  CK(cudaGraphGetNodes(embedded, nullptr, &count));
  std::vector<cudaGraphNode_t> inner(count);
  CK(cudaGraphGetNodes(embedded, inner.data(), &count));
  cudaGraphExec_t exec;
  CK(cudaGraphInstantiate(&exec, parent, 0));
  CK(cudaGraphLaunch(exec, s));
  std::printf("first launch correct: %s\n", holds(out, 0, s) ? "yes" : "NO");

  // The nodes of the embedded graph come back in insertion order? Find kernel i's node by its
  // parameters.
  std::vector<cudaGraphNode_t> by_index(n);
  for (cudaGraphNode_t node : inner) {
    cudaKernelNodeParams p{};
    CK(cudaGraphKernelNodeGetParams(node, &p));
    by_index[*static_cast<int*>(p.kernelParams[1])] = node;
  }

  // Q1: set every inner kernel node by itself.
  auto set_inner = [&](int value) {
    for (int i = 0; i < n; ++i) {
      int v = value + i;
      void* args[] = {&out, &i, &v};
      const cudaKernelNodeParams p = store_node(args);
      const cudaError_t e = cudaGraphExecKernelNodeSetParams(exec, by_index[i], &p);
      if (e != cudaSuccess) return e;
    }
    return cudaSuccess;
  };
  const cudaError_t q1 = set_inner(1000);
  std::printf("Q1 cudaGraphExecKernelNodeSetParams on a node inside a child graph: %s\n",
              cudaGetErrorString(q1));
  (void)cudaGetLastError();
  if (q1 == cudaSuccess) {
    CK(cudaGraphLaunch(exec, s));
    std::printf("   the launch after it stores the new values: %s\n",
                holds(out, 1000, s) ? "yes" : "NO");
  }

  std::vector<double> inner_us, child_us, whole_us;
  for (int t = 0; t < 9; ++t) {
    const int value = 2000 + 3000 * t;
    if (q1 == cudaSuccess) {
      inner_us.push_back(host_us([&] { CK(set_inner(value)); }));
      CK(cudaGraphLaunch(exec, s));
      if (!holds(out, value, s)) std::printf("   inner set, trial %d: wrong values\n", t);
    }
    cudaGraph_t next_child = chain(out, value + 1000);
    child_us.push_back(host_us([&] {
      CK(cudaGraphExecChildGraphNodeSetParams(exec, child_node, next_child));
    }));
    CK(cudaGraphLaunch(exec, s));
    if (!holds(out, value + 1000, s)) std::printf("   child set, trial %d: wrong values\n", t);
    CK(cudaGraphDestroy(next_child));
    cudaGraph_t next_parent;
    CK(cudaGraphCreate(&next_parent, 0));
    cudaGraph_t c2 = chain(out, value + 2000);
    cudaGraphNode_t cn2;
    CK(cudaGraphAddChildGraphNode(&cn2, next_parent, nullptr, 0, c2));
    cudaGraphExecUpdateResultInfo info;
    whole_us.push_back(host_us([&] { CK(cudaGraphExecUpdate(exec, next_parent, &info)); }));
    CK(cudaGraphLaunch(exec, s));
    if (!holds(out, value + 2000, s)) std::printf("   whole update, trial %d: wrong values\n", t);
    CK(cudaGraphDestroy(c2));
    CK(cudaGraphDestroy(next_parent));
  }
  std::printf("host us for a child of %d kernels, all with new values (medians of 9):\n", n);
  if (!inner_us.empty()) std::printf("  each inner node set:          %9.1f\n", probe::median(inner_us));
  std::printf("  the child node set (graph built before, not counted): %9.1f\n", probe::median(child_us));
  std::printf("  cudaGraphExecUpdate of the parent (built before):    %9.1f\n", probe::median(whole_us));
  return 0;
}
