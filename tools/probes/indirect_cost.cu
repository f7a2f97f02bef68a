// indirect_cost.cu -- standalone probe: where the device time of an indirect dispatch goes.
// A chain of 200 kernels of 64 one-thread-busy blocks, each preceded (or not) by a one-thread
// dispatcher that sizes it from device memory; the chain is replayed and each variant's device
// time per launch compared with the plain chain:
//   plain               the chain alone
//   updatable           the chain, every node device-updatable, no dispatcher
//   + empty nodes       a plain one-thread kernel before each (the node count of a dispatcher)
//   + dispatcher: none  a dispatcher that calls nothing
//   + enabled           the dispatcher calls cudaGraphKernelNodeSetEnabled
//   + grid              ... cudaGraphKernelNodeSetGridDim
//   + enabled,grid,param ... all three (what cmdgraph's count dispatcher does)
//   + the three in one apply  the same three as one cudaGraphKernelNodeUpdatesApply
//   + grid, programmatic   SetGridDim, then cudaTriggerProgrammaticLaunchCompletion, the edge to
//                          the kernel programmatic
//   + all three, programmatic
// A kernel at the head of the graph changes the size every launch (32..63 blocks); every
// kernel writes the grid it ran with, checked after every launch for the variants that size it
// (a stale grid is counted, never hidden). Medians of 15 trials of 20 launches each, variants
// alternating within a trial.
//
// Build: nvcc -std=c++20 -O2 -arch=sm_90 -rdc=true tools/probes/indirect_cost.cu -o probe \
//          -lcudadevrt
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x)                                                                              \
  do {                                                                                     \
    const cudaError_t s_ = (x);                                                            \
    if (s_ != cudaSuccess) {                                                               \
      std::printf("%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(s_));       \
      std::exit(1);                                                                        \
    }                                                                                      \
  } while (0)

constexpr int chain = 200;
constexpr int trials = 15;
constexpr int launches_per_trial = 20;

__global__ void work(int* out, int i, unsigned long long items) {
  if (threadIdx.x == 0 && blockIdx.x == 0) out[i] = static_cast<int>(gridDim.x + 0 * items);
}
__global__ void bump(unsigned* size, unsigned* launches) {
  const unsigned n = ++*launches;
  *size = 32 + n % 32;
}
__global__ void empty() {}

enum Calls { none = 0, enabled = 1, grid = 2, param = 4, trigger = 8, batched = 16 };
__global__ void dispatcher(cudaGraphDeviceNode_t node, const unsigned* size, int calls) {
  const unsigned n = *size;
  if (calls & batched) {  // the three as one cudaGraphKernelNodeUpdatesApply
    const unsigned long long items = n * 256ull;
    // The update's union holds a dim3, whose constructor deletes the struct's default one.
    alignas(cudaGraphKernelNodeUpdate) unsigned char raw[3 * sizeof(cudaGraphKernelNodeUpdate)];
    memset(raw, 0, sizeof raw);
    auto* u = reinterpret_cast<cudaGraphKernelNodeUpdate*>(raw);
    u[0].node = node;
    u[0].field = cudaGraphKernelNodeFieldEnabled;
    u[0].updateData.isEnabled = n != 0;
    u[1].node = node;
    u[1].field = cudaGraphKernelNodeFieldGridDim;
    u[1].updateData.gridDim = dim3(n);
    u[2].node = node;
    u[2].field = cudaGraphKernelNodeFieldParam;
    u[2].updateData.param.pValue = &items;
    u[2].updateData.param.offset = 16;
    u[2].updateData.param.size = sizeof items;
    cudaGraphKernelNodeUpdatesApply(u, 3);
    return;
  }
  if (calls & enabled) cudaGraphKernelNodeSetEnabled(node, n != 0);
  if (calls & grid) cudaGraphKernelNodeSetGridDim(node, dim3(n));
  if (calls & param) {
    const unsigned long long items = n * 256ull;
    cudaGraphKernelNodeSetParam(node, 16, &items, sizeof items);
  }
  if (calls & trigger) cudaTriggerProgrammaticLaunchCompletion();
}

struct Variant {
  const char* name;
  bool updatable, empty_before, dispatch, programmatic;
  int calls;
  cudaGraphExec_t exec = nullptr;
  std::vector<float> ms;
  long stale = 0;
};

cudaGraphNode_t add_kernel(cudaGraph_t g, const cudaGraphNode_t* dep, const void* f,
                           void** params, dim3 grid_dim, dim3 block,
                           const cudaGraphEdgeData* edge = nullptr) {
  cudaGraphNodeParams p{};
  p.type = cudaGraphNodeTypeKernel;
  p.kernel.func = const_cast<void*>(f);
  p.kernel.gridDim = grid_dim;
  p.kernel.blockDim = block;
  p.kernel.kernelParams = params;
  cudaGraphNode_t n;
  CK(cudaGraphAddNode(&n, g, dep, edge, dep ? 1 : 0, &p));
  return n;
}

void build(Variant& v, int* out, unsigned* size, unsigned* launches) {
  cudaGraph_t g;
  CK(cudaGraphCreate(&g, 0));
  void* bump_params[] = {&size, &launches};
  cudaGraphNode_t last = add_kernel(g, nullptr, (const void*)bump, bump_params, 1, 1);
  for (int i = 0; i < chain; ++i) {
    unsigned long long items = 64 * 256;
    void* work_params[] = {&out, &i, &items};
    cudaGraphNode_t k = add_kernel(g, nullptr, (const void*)work, work_params, 64, 256);
    cudaGraphDeviceNode_t dev{};
    if (v.updatable) {
      cudaLaunchAttributeValue a{};
      a.deviceUpdatableKernelNode.deviceUpdatable = 1;
      CK(cudaGraphKernelNodeSetAttribute(k, cudaLaunchAttributeDeviceUpdatableKernelNode, &a));
      cudaLaunchAttributeValue h{};
      CK(cudaGraphKernelNodeGetAttribute(k, cudaLaunchAttributeDeviceUpdatableKernelNode, &h));
      dev = h.deviceUpdatableKernelNode.devNode;
    }
    if (v.empty_before) last = add_kernel(g, &last, (const void*)empty, nullptr, 1, 1);
    cudaGraphEdgeData edge{};
    if (v.dispatch) {
      int calls = v.calls;
      void* d_params[] = {&dev, &size, &calls};
      last = add_kernel(g, &last, (const void*)dispatcher, d_params, 1, 1);
      if (v.programmatic) {
        edge.from_port = cudaGraphKernelNodePortProgrammatic;
        edge.type = cudaGraphDependencyTypeProgrammatic;
      }
    }
    CK(cudaGraphAddDependencies(g, &last, &k, &edge, 1));
    last = k;
  }
  CK(cudaGraphInstantiate(&v.exec, g, 0));
  CK(cudaGraphDestroy(g));
}

int main() {
  int* out;
  unsigned *size, *launches;
  CK(cudaMalloc(&out, chain * sizeof(int)));
  CK(cudaMalloc(&size, sizeof(unsigned)));
  CK(cudaMalloc(&launches, sizeof(unsigned)));
  CK(cudaMemset(launches, 0, sizeof(unsigned)));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  std::vector<Variant> vs = {
      {"plain", false, false, false, false, none},
      {"updatable", true, false, false, false, none},
      {"+ empty nodes", false, true, false, false, none},
      {"+ dispatcher: none", true, false, true, false, none},
      {"+ enabled", true, false, true, false, enabled},
      {"+ grid", true, false, true, false, grid},
      {"+ enabled,grid,param", true, false, true, false, enabled | grid | param},
      {"+ the three in one apply", true, false, true, false, batched | grid},
      {"+ grid, programmatic", true, false, true, true, grid | trigger},
      {"+ all three, programmatic", true, false, true, true, enabled | grid | param | trigger},
  };
  for (Variant& v : vs) {
    build(v, out, size, launches);
    CK(cudaGraphUpload(v.exec, s));
  }
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  std::vector<int> seen(chain);
  for (int t = -1; t < trials; ++t) {  // trial -1 warms up
    for (Variant& v : vs) {
      float total = 0;
      for (int l = 0; l < launches_per_trial; ++l) {
        CK(cudaEventRecord(a, s));
        CK(cudaGraphLaunch(v.exec, s));
        CK(cudaEventRecord(b, s));
        CK(cudaStreamSynchronize(s));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, a, b));
        total += ms;
        if (v.calls & grid) {
          unsigned want = 0;
          CK(cudaMemcpy(&want, size, sizeof want, cudaMemcpyDeviceToHost));
          CK(cudaMemcpy(seen.data(), out, chain * sizeof(int), cudaMemcpyDeviceToHost));
          for (int i = 0; i < chain; ++i) v.stale += seen[i] != static_cast<int>(want);
        }
      }
      if (t >= 0) v.ms.push_back(total / launches_per_trial);
    }
  }
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("indirect_cost on %s: a chain of %d kernels, device time per launch, medians of %d "
              "trials of %d launches\n", prop.name, chain, trials, launches_per_trial);
  auto median = [](std::vector<float> x) {
    std::sort(x.begin(), x.end());
    return x[x.size() / 2];
  };
  const float base = median(vs[0].ms);
  for (Variant& v : vs) {
    const float m = median(v.ms);
    std::printf("  %-28s %9.2f us  %+6.2f us a kernel over plain  stale grids %ld\n", v.name,
                m * 1000, (m - base) * 1000 / chain, v.stale);
  }
  return 0;
}
