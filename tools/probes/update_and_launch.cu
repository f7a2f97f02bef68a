// Where the host time of an update and of a launch goes, raw CUDA against cmdgraph.
//   nvcc -std=c++20 -O2 -arch=sm_90 -cudart shared -Iinclude -IBUILD/include
//        tools/probes/update_and_launch.cu -o probe -LBUILD/lib -lcmdgraph -lcupti
//        -Xlinker -rpath -Xlinker BUILD/lib
// A. Setting k nodes of an instantiated chain of n one-thread kernels: through
//    cudaGraphExecKernelNodeSetParams and through the generic cudaGraphExecNodeSetParams, each
//    with the host's caches warm and after 64 MB were written (as recording a frame does).
// B. The same k through cmdgraph's exe.update(handle, ...), warm and after the 64 MB.
// C. A launch of a chain of 1,000: cudaGraphLaunch of a raw graph, cmdgraph's launch(), and
//    cudaGraphLaunch of cmdgraph's own graph exec (its handle taken from a CUPTI callback), in
//    turns, each alone on an idle stream; and which CUDA calls one launch() makes.
// Medians of 15 trials (A, B) and of 600 turns (C).
#include <cmdgraph/cmdgraph.hpp>

#include <cuda_runtime.h>
#include <cupti.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "probe.hpp"

using namespace cmdgraph;

namespace {

__global__ void store(int i, int value, int* out) { out[i] = value; }

double host_us(const std::function<void()>& fn) {
  const auto t0 = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
}

std::vector<char> pollution(64 << 20);
void pollute(int round) { std::memset(pollution.data(), round & 0xff, pollution.size()); }

// A one-thread launch of `store` with `args`.
cudaKernelNodeParams store_node(void** args) {
  cudaKernelNodeParams p{};
  p.func = reinterpret_cast<void*>(&store);
  p.gridDim = dim3(1);
  p.blockDim = dim3(1);
  p.kernelParams = args;
  return p;
}

// A one-thread `store` node after `parent` (none when null).
cudaGraphNode_t add_store(cudaGraph_t g, cudaGraphNode_t parent, int index, int value, int* ptr) {
  void* args[] = {&index, &value, &ptr};
  const cudaKernelNodeParams p = store_node(args);
  cudaGraphNode_t node;
  CHECK(cudaGraphAddKernelNode(&node, g, parent ? &parent : nullptr, parent ? 1 : 0, &p));
  return node;
}

void sets(int n, int k) {
  const Device gpu = Device::cuda(0);
  Buffer<int> out(gpu, static_cast<std::size_t>(n));
  int* ptr = out.data();
  const int stride = n / k;
  // Raw chain.
  cudaGraph_t g;
  CHECK(cudaGraphCreate(&g, 0));
  std::vector<cudaGraphNode_t> nodes;
  for (int i = 0; i < n; ++i) {
    nodes.push_back(add_store(g, nodes.empty() ? nullptr : nodes.back(), i, i, ptr));
  }
  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, g, 0));
  // cmdgraph's chain.
  CommandBuffer cmd("chain");
  std::vector<KernelCommand<int, int, int*>> handles;
  for (int i = 0; i < n; ++i) {
    auto h = cmd.launch(&store, LaunchConfig{{1}, {1}}, i, i, ptr);
    if (i) h.after(handles.back());
    handles.push_back(h);
  }
  Executable exe = compile(cmd, gpu, {.backend = Backend::cuda_graph});

  auto kernel_sets = [&](int frame) {
    for (int i = 0; i < n; i += stride) {
      int index = i, value = frame * 1000 + i;
      void* args[] = {&index, &value, &ptr};
      const cudaKernelNodeParams p = store_node(args);
      CHECK(cudaGraphExecKernelNodeSetParams(exec, nodes[static_cast<std::size_t>(i)], &p));
    }
  };
  auto generic_sets = [&](int frame) {
    for (int i = 0; i < n; i += stride) {
      int index = i, value = frame * 1000 + i;
      void* args[] = {&index, &value, &ptr};
      cudaGraphNodeParams p{};
      p.type = cudaGraphNodeTypeKernel;
      p.kernel.func = reinterpret_cast<void*>(&store);
      p.kernel.gridDim = dim3(1);
      p.kernel.blockDim = dim3(1);
      p.kernel.kernelParams = args;
      CHECK(cudaGraphExecNodeSetParams(exec, nodes[static_cast<std::size_t>(i)], &p));
    }
  };
  auto ours = [&](int frame) {
    for (int i = 0; i < n; i += stride) {
      exe.update(handles[static_cast<std::size_t>(i)], i, frame * 1000 + i, ptr);
    }
  };
  std::vector<double> kw, gw, ow, kc, gc, oc;
  for (int t = 0; t < 16; ++t) {
    const int f = 2 * t;
    const double a = host_us([&] { kernel_sets(f); });
    const double b = host_us([&] { generic_sets(f + 1); });
    const double c = host_us([&] { ours(f); });
    pollute(t);
    const double d = host_us([&] { kernel_sets(f + 1); });
    pollute(t + 1);
    const double e = host_us([&] { generic_sets(f); });
    pollute(t + 2);
    const double h = host_us([&] { ours(f + 1); });
    if (t == 0) continue;
    kw.push_back(a), gw.push_back(b), ow.push_back(c), kc.push_back(d), gc.push_back(e),
        oc.push_back(h);
  }
  std::printf("A/B n=%5d k=%4d  per set, warm: kernel %.2f  generic %.2f  cmdgraph %.2f us;"
              "  cold: kernel %.2f  generic %.2f  cmdgraph %.2f us\n",
              n, k, probe::median(kw) / k, probe::median(gw) / k, probe::median(ow) / k, probe::median(kc) / k,
              probe::median(gc) / k, probe::median(oc) / k);
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(g));
}

// CUPTI: which calls a launch() makes, and cmdgraph's exec.
bool counting = false;
std::map<std::string, int> calls;
cudaGraphExec_t seen_exec = nullptr;

void CUPTIAPI on_call(void*, CUpti_CallbackDomain domain, CUpti_CallbackId, const void* data) {
  const auto* d = static_cast<const CUpti_CallbackData*>(data);
  if (d->callbackSite != CUPTI_API_ENTER) return;
  const std::string name = d->functionName ? d->functionName : "?";
  if (name.rfind("cudaGraphLaunch", 0) == 0 && d->functionParams) {
    seen_exec = *static_cast<const cudaGraphExec_t*>(d->functionParams);
  }
  if (counting) ++calls[(domain == CUPTI_CB_DOMAIN_RUNTIME_API ? "rt " : "drv ") + name];
}

void launches(int n) {
  const Device gpu = Device::cuda(0);
  Queue q(gpu);
  cudaStream_t stream = q.native_handle();
  Buffer<int> out(gpu, static_cast<std::size_t>(n));
  int* ptr = out.data();
  cudaGraph_t g;
  CHECK(cudaGraphCreate(&g, 0));
  cudaGraphNode_t last = nullptr;
  CommandBuffer cmd("chain");
  Command prev;
  for (int i = 0; i < n; ++i) {
    last = add_store(g, last, i, i, ptr);
    auto h = cmd.launch(&store, LaunchConfig{{1}, {1}}, i, i, ptr);
    if (i) h.after(prev);
    prev = h;
  }
  cudaGraphExec_t raw;
  CHECK(cudaGraphInstantiate(&raw, g, 0));
  Executable exe = compile(cmd, gpu, {.backend = Backend::cuda_graph});
  exe.launch(q).wait();

  CUpti_SubscriberHandle subscriber;
  CHECK(cuptiSubscribe(&subscriber, on_call, nullptr));
  CHECK(cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API));
  CHECK(cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API));
  constexpr int counted = 100;
  for (int i = 0; i < counted; ++i) {
    counting = true;
    exe.launch(q);
    counting = false;
    q.wait();
  }
  CHECK(cuptiUnsubscribe(subscriber));
  std::printf("C n=%d: CUDA calls in one launch():", n);
  for (const auto& [name, count] : calls) {
    std::printf(" %s x%.2f;", name.c_str(), 1.0 * count / counted);
  }
  std::printf("\n");
  calls.clear();
  cudaGraphExec_t mine = seen_exec;

  std::vector<double> r, o, m;
  for (int i = 0; i < 600 + 30; ++i) {
    double t[3];
    for (int j = 0; j < 3; ++j) {
      const int which = (i + j) % 3;
      if (which == 0) {
        t[0] = host_us([&] { CHECK(cudaGraphLaunch(raw, stream)); });
        CHECK(cudaStreamSynchronize(stream));
      } else if (which == 1) {
        t[1] = host_us([&] { exe.launch(q); });
        q.wait();
      } else {
        t[2] = host_us([&] { CHECK(cudaGraphLaunch(mine, stream)); });
        CHECK(cudaStreamSynchronize(stream));
      }
    }
    if (i < 30) continue;
    r.push_back(t[0]), o.push_back(t[1]), m.push_back(t[2]);
  }
  std::vector<double> om, mr;
  for (std::size_t i = 0; i < r.size(); ++i) om.push_back(o[i] - m[i]), mr.push_back(m[i] - r[i]);
  std::printf("C n=%d: medians raw %.2f, launch() %.2f, cudaGraphLaunch(cmdgraph's exec) %.2f us;"
              " pairs: launch() - its exec %+.2f, its exec - raw %+.2f us\n",
              n, probe::median(r), probe::median(o), probe::median(m), probe::median(om), probe::median(mr));
  CHECK(cudaGraphExecDestroy(raw));
  CHECK(cudaGraphDestroy(g));
}

}  // namespace

int main() {
  sets(1000, 10);
  sets(1000, 100);
  sets(10000, 100);
  sets(10000, 1000);
  launches(1);
  launches(1000);
  return 0;
}
