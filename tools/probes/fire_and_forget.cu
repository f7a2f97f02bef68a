// fire_and_forget.cu -- standalone probe: what a fire-and-forget device launch of a one-kernel
// graph costs, the launched graph made five ways (raw cudaGraphAddKernelNode; the generic
// cudaGraphAddNode; raw with its cudaGraph_t kept alive; cmdgraph's compile(); raw uploaded
// on a stream of its own), each launched 200 times by a parent graph; median of 15 trials of
// device time per pair. With LOOP_FIRST set, a graph that tail-launches itself 1,000 times
// runs 15 times first (and is destroyed), as bench_device_launch's loop section did before
// its fire-and-forget section.
//
// Build against a CUDA build of cmdgraph (the shared runtime: cmdgraph's kernels and these
// must live in one runtime), e.g. from the top of the tree with the build in build-gpu:
//   nvcc -std=c++20 -arch=sm_90 -rdc=true -cudart shared -Iinclude -Ibuild-gpu/include \
//     tools/probes/fire_and_forget.cu -o probe -Lbuild-gpu/lib -lcmdgraph -lcudadevrt \
//     -Xlinker -rpath -Xlinker $PWD/build-gpu/lib
// Run: ./probe; LOOP_FIRST=1 ./probe
#include <cmdgraph/cmdgraph.hpp>
#include <cmdgraph/device_launch.cuh>

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

using namespace cmdgraph;

#define CK(x)                                                                         \
  do {                                                                                \
    const cudaError_t s_ = (x);                                                       \
    if (s_ != cudaSuccess) {                                                          \
      std::printf("%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(s_)); \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

namespace {

__global__ void count_step(int* c) { ++*c; }
__global__ void loop_step(int* counter) {
  if (++counter[0] < 1000) cmdgraph::device::launch_again();
}
__global__ void launch_beside(cudaGraphExec_t child, int* status) {
  const cudaError_t s = cudaGraphLaunch(child, cudaStreamGraphFireAndForget);
  if (s != cudaSuccess) *status = s;
}

cudaGraphExec_t instantiate(cudaGraph_t g, unsigned flags, cudaStream_t upload) {
  cudaGraphInstantiateParams ip{};
  ip.flags = flags | cudaGraphInstantiateFlagUpload;
  ip.uploadStream = upload;
  cudaGraphExec_t e = nullptr;
  CK(cudaGraphInstantiateWithParams(&e, g, &ip));
  return e;
}

cudaGraphExec_t one_kernel(const cudaKernelNodeParams& p, bool keep, cudaStream_t upload) {
  cudaGraph_t g;
  CK(cudaGraphCreate(&g, 0));
  cudaGraphNode_t n;
  CK(cudaGraphAddKernelNode(&n, g, nullptr, 0, &p));
  cudaGraphExec_t e = instantiate(g, cudaGraphInstantiateFlagDeviceLaunch, upload);
  if (!keep) CK(cudaGraphDestroy(g));
  return e;
}

}  // namespace

int main() {
  const Device gpu = Device::cuda(0);
  Queue queue(gpu);
  const auto s = static_cast<cudaStream_t>(queue.native_handle());
  Buffer<int> counter(gpu, 2), status(gpu, 1);
  int* count = counter.data();
  int* st = status.data();
  CK(cudaMemset(st, 0, sizeof(int)));
  if (std::getenv("LOOP_FIRST")) {
    CommandBuffer lc("loop");
    lc.launch(&loop_step, LaunchConfig{{1}, {1}}, count);
    Executable loop = compile(lc, gpu, {.device_launch = true});
    for (int i = 0; i < 15; ++i) {
      CK(cudaMemsetAsync(count, 0, 2 * sizeof(int), s));
      loop.launch(queue).wait();
    }
    std::printf("a self-tail-launching loop ran first\n");
  }
  void* args[] = {&count};
  cudaKernelNodeParams p{};
  p.func = reinterpret_cast<void*>(&count_step);
  p.gridDim = dim3(1);
  p.blockDim = dim3(1);
  p.kernelParams = args;
  cudaGraph_t generic;
  CK(cudaGraphCreate(&generic, 0));
  cudaGraphNodeParams np{};
  np.type = cudaGraphNodeTypeKernel;
  np.kernel.func = p.func;
  np.kernel.gridDim = p.gridDim;
  np.kernel.blockDim = p.blockDim;
  np.kernel.kernelParams = args;
  cudaGraphNode_t n;
  CK(cudaGraphAddNode(&n, generic, nullptr, nullptr, 0, &np));
  CommandBuffer cb("child");
  cb.launch(&count_step, LaunchConfig{{1}, {1}}, count);
  Executable ours = compile(cb, gpu, {.device_launch = true});
  cudaStream_t other;
  CK(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
  const cudaGraphExec_t children[] = {
      one_kernel(p, false, s), instantiate(generic, cudaGraphInstantiateFlagDeviceLaunch, s),
      one_kernel(p, true, s), static_cast<cudaGraphExec_t>(ours.device_executable(queue).graph),
      one_kernel(p, false, other)};
  const char* names[] = {"raw AddKernelNode", "generic AddNode", "raw, graph kept", "cmdgraph",
                         "raw, uploaded elsewhere"};
  CK(cudaStreamSynchronize(other));
  CK(cudaGraphDestroy(generic));
  std::vector<cudaGraphExec_t> parents;
  for (cudaGraphExec_t child : children) {
    void* pa[] = {&child, &st};
    cudaKernelNodeParams pp = p;
    pp.func = reinterpret_cast<void*>(&launch_beside);
    pp.kernelParams = pa;
    parents.push_back(one_kernel(pp, false, s));
  }
  CK(cudaDeviceSynchronize());
  std::vector<std::vector<double>> t(parents.size());
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  for (int trial = 0; trial < 15; ++trial) {
    for (std::size_t k = 0; k < parents.size(); ++k) {
      CK(cudaEventRecord(e0, s));
      for (int i = 0; i < 200; ++i) CK(cudaGraphLaunch(parents[k], s));
      CK(cudaEventRecord(e1, s));
      CK(cudaEventSynchronize(e1));
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, e0, e1));
      t[k].push_back(ms * 1000 / 200);
    }
  }
  int refused = 0;
  CK(cudaMemcpy(&refused, st, sizeof refused, cudaMemcpyDeviceToHost));
  for (std::size_t k = 0; k < parents.size(); ++k) {
    std::sort(t[k].begin(), t[k].end());
    std::printf("%-26s %.2f us a pair (%.2fx the first)\n", names[k], t[k][7], t[k][7] / t[0][7]);
  }
  std::printf("launches refused: %d\n", refused);
  return refused != 0;
}
