// What CUPTI costs the launches it does not trace: the host time of one cudaGraphLaunch of a raw
// graph (a chain of 1,000 empty kernels, and one kernel), each call alone on an idle stream,
// measured as CUPTI is set up step by step in the process, and around a cmdgraph executable
// compiled with `profile = true`. CUPTI's state lives as long as the process, so each mode
// runs in a process of its own:
//   bench_cupti_side steps     subscribe, register buffers, enable the callbacks cmdgraph
//                              enables, switch the activity kinds on and off, unsubscribe,
//                              cuptiFinalize
//   bench_cupti_side cmdgraph  before, while and after an executable profiled through CUPTI
#include "bench_cupti.cuh"
#include "bench_support.cuh"

#include <cmdgraph/cmdgraph.hpp>

#include <cupti.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace cmdgraph;

namespace {

// A raw graph of `n` empty kernels in a chain, instantiated and uploaded.
cudaGraphExec_t chain(int n, cudaStream_t s) {
  cudaGraph_t g;
  BENCH_CUDA(cudaGraphCreate(&g, 0));
  cudaGraphNode_t prev = nullptr;
  for (int i = 0; i < n; ++i) {
    int zero = 0;
    void* args[] = {&zero};
    const cudaKernelNodeParams p = bench::one_thread_node(&bench::empty_kernel, args);
    cudaGraphNode_t node;
    BENCH_CUDA(cudaGraphAddKernelNode(&node, g, prev ? &prev : nullptr, prev ? 1 : 0, &p));
    prev = node;
  }
  cudaGraphExec_t exec;
  BENCH_CUDA(cudaGraphInstantiate(&exec, g, 0));
  BENCH_CUDA(cudaGraphUpload(exec, s));
  BENCH_CUDA(cudaStreamSynchronize(s));
  BENCH_CUDA(cudaGraphDestroy(g));
  return exec;
}

struct Graphs {
  cudaStream_t stream;
  cudaGraphExec_t long_chain, one;
};

// Median host time of one launch, each call alone on the idle stream.
double launch_us(cudaGraphExec_t exec, cudaStream_t s) {
  std::vector<double> calls;
  for (int i = 0; i < 41; ++i) {
    calls.push_back(bench::host_us([&] { BENCH_CUDA(cudaGraphLaunch(exec, s)); }));
    BENCH_CUDA(cudaStreamSynchronize(s));
  }
  return bench::median(calls);
}

void measure(const char* step, const Graphs& g) {
  // A graph instantiated now too: CUPTI may treat graphs made after a step otherwise.
  cudaGraphExec_t fresh = chain(1000, g.stream);
  std::printf("%-62s %9.2f us %9.2f us %9.2f us\n", step, launch_us(g.long_chain, g.stream),
              launch_us(fresh, g.stream), launch_us(g.one, g.stream));
  BENCH_CUDA(cudaGraphExecDestroy(fresh));
}

void CUPTIAPI ignore(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

void CUPTIAPI requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = 1 << 20;
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, *size));
  *max_records = 0;
}

void CUPTIAPI completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t) {
  std::free(buffer);
}

void steps(const Graphs& g) {
  measure("no CUPTI", g);
  CUpti_SubscriberHandle subscriber;
  BENCH_CUPTI(cuptiSubscribe(&subscriber, &ignore, nullptr));
  measure("subscribed", g);
  BENCH_CUPTI(cuptiActivityRegisterCallbacks(&requested, &completed));
  measure("+ buffer callbacks registered", g);
  BENCH_CUPTI(cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE,
                                  CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED));
  measure("+ resource callback: graph node cloned", g);
  for (CUpti_CallbackId id :
       {CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz}) {
    BENCH_CUPTI(cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, id));
  }
  measure("+ driver callbacks: cuGraphLaunch", g);
  for (CUpti_CallbackId id : {CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
                              CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000}) {
    BENCH_CUPTI(cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, id));
  }
  measure("+ runtime callbacks: cudaGraphLaunch", g);
  const CUpti_ActivityKind kinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                      CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET};
  for (CUpti_ActivityKind k : kinds) BENCH_CUPTI(cuptiActivityEnable(k));
  measure("+ activity kinds on (kernels, copies, fills)", g);
  for (CUpti_ActivityKind k : kinds) BENCH_CUPTI(cuptiActivityDisable(k));
  BENCH_CUPTI(cuptiActivityFlushAll(1));
  measure("  kinds off again", g);
  BENCH_CUPTI(cuptiEnableCallback(0, subscriber, CUPTI_CB_DOMAIN_RESOURCE,
                                  CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED));
  measure("  resource callback off", g);
  BENCH_CUPTI(cuptiUnsubscribe(subscriber));
  measure("unsubscribed", g);
  BENCH_CUPTI(cuptiFinalize());
  measure("cuptiFinalize", g);
}

__global__ void touch(int* p) { *p = 1; }

void around_cmdgraph(const Graphs& g) {
  measure("no executable profiled yet", g);
  Buffer<int> out(Device::cuda(0), 1);
  {
    CommandBuffer cmd("side");
    cmd.launch(&touch, LaunchConfig{{1}, {1}}, out.data());
    Executable exe = compile(cmd, Device::cuda(0), {.profile = true});
    std::printf("(profile_mode %s: %s)\n", to_string(exe.stats().profile_mode),
                exe.stats().profile_reason.c_str());
    measure("an executable compiled with profile = true", g);
    Queue q(Device::cuda(0));
    exe.launch(q).wait();
    (void)exe.last_profile();
    measure("  after one traced launch", g);
  }
  measure("the executable destroyed", g);
}

}  // namespace

int main(int argc, char** argv) {
  if (bench::no_gpu("bench_cupti_side")) return 0;
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode != "steps" && mode != "cmdgraph") {
    std::fprintf(stderr, "usage: bench_cupti_side steps|cmdgraph (one per process)\n");
    return 2;
  }
  Graphs g;
  BENCH_CUDA(cudaStreamCreateWithFlags(&g.stream, cudaStreamNonBlocking));
  g.long_chain = chain(1000, g.stream);
  g.one = chain(1, g.stream);
  std::printf("bench_cupti_side %s: host time of one cudaGraphLaunch on an idle stream, median "
              "of 41\n%-62s %12s %12s %12s\n",
              mode.c_str(), "", "chain 1000", "(made now)", "one kernel");
  if (mode == "steps") {
    steps(g);
  } else {
    around_cmdgraph(g);
  }
  BENCH_CUDA(cudaGraphExecDestroy(g.long_chain));
  BENCH_CUDA(cudaGraphExecDestroy(g.one));
  BENCH_CUDA(cudaStreamDestroy(g.stream));
  return 0;
}
