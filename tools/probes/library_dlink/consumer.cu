// The consumer side, compiled by nvcc WITHOUT -rdc (as a user's own kernels would be) and
// linked by g++ against the archive: a graph [dispatcher] -> [work], the dispatcher from the
// archive setting the work node's grid from a count in device memory, for counts 0, 1, 300.
#include <cuda_runtime.h>

#include <cstdio>

extern "C" const void* probe_dispatcher();

#define CHECK(call)                                                                      \
  do {                                                                                   \
    const cudaError_t e = (call);                                                        \
    if (e != cudaSuccess) {                                                              \
      std::printf("FAIL %s line %d: %s\n", #call, __LINE__, cudaGetErrorString(e));      \
      return 1;                                                                          \
    }                                                                                    \
  } while (0)

__global__ void work(unsigned* blocks_seen) {
  if (threadIdx.x == 0) atomicAdd(blocks_seen, 1u);
}

int main() {
  unsigned *count, *seen;
  CHECK(cudaMalloc(&count, sizeof(unsigned)));
  CHECK(cudaMalloc(&seen, sizeof(unsigned)));
  cudaGraph_t graph;
  CHECK(cudaGraphCreate(&graph, 0));
  cudaKernelNodeParams wp{};
  void* wargs[] = {&seen};
  wp.func = reinterpret_cast<void*>(&work);
  wp.gridDim = dim3(1);
  wp.blockDim = dim3(32);
  wp.kernelParams = wargs;
  cudaGraphNode_t work_node;
  CHECK(cudaGraphAddKernelNode(&work_node, graph, nullptr, 0, &wp));
  cudaLaunchAttributeValue v{};
  v.deviceUpdatableKernelNode.deviceUpdatable = 1;
  CHECK(cudaGraphKernelNodeSetAttribute(work_node, cudaLaunchAttributeDeviceUpdatableKernelNode, &v));
  cudaLaunchAttributeValue got{};
  CHECK(cudaGraphKernelNodeGetAttribute(work_node, cudaLaunchAttributeDeviceUpdatableKernelNode, &got));
  cudaGraphDeviceNode_t dev = got.deviceUpdatableKernelNode.devNode;
  unsigned per_block = 128;
  void* dargs[] = {&dev, &count, &per_block};
  cudaKernelNodeParams dp{};
  dp.func = const_cast<void*>(probe_dispatcher());
  dp.gridDim = dim3(1);
  dp.blockDim = dim3(1);
  dp.kernelParams = dargs;
  cudaGraphNode_t dispatch_node;
  CHECK(cudaGraphAddKernelNode(&dispatch_node, graph, nullptr, 0, &dp));
  CHECK(cudaGraphAddDependencies(graph, &dispatch_node, &work_node, nullptr, 1));
  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  int failures = 0;
  for (unsigned items : {0u, 1u, 300u, 128u * 1000u}) {
    const unsigned expected = (items + per_block - 1) / per_block;
    CHECK(cudaMemcpy(count, &items, sizeof items, cudaMemcpyHostToDevice));
    CHECK(cudaMemset(seen, 0, sizeof(unsigned)));
    CHECK(cudaGraphLaunch(exec, 0));
    CHECK(cudaDeviceSynchronize());
    unsigned blocks = 0;
    CHECK(cudaMemcpy(&blocks, seen, sizeof blocks, cudaMemcpyDeviceToHost));
    std::printf("count %u: work ran %u blocks, expected %u: %s\n", items, blocks, expected,
                blocks == expected ? "ok" : "WRONG");
    failures += blocks != expected;
  }
  std::printf("%s\n", failures == 0 ? "library_dlink: PASS" : "library_dlink: FAIL");
  return failures;
}
