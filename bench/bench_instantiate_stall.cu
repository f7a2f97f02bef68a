// What building a second graph on another thread costs the launches of this one: one thread
// launches a one-kernel graph and records an event, again and again, waiting for each; another
// makes, instantiates, uploads, launches and destroys a graph of n kernels (graph_of), pausing
// between steps. Printed per step: its
// length and the slowest launch-and-record call made while it ran, against the median call.
// Shape learning (lib/backend/cuda_graph/shape_learning) builds candidates on a thread of its
// own; this says what that can and cannot hide.
#include "bench_support.cuh"

#include <atomic>
#include <set>
#include <thread>

namespace {

using Clock = std::chrono::steady_clock;

struct Call {
  double at_us, took_us;
};

struct Step {
  const char* name;
  double begin_us, end_us;
};

// n empty kernels: on 17 chains; or each after 1-3 kernels among all earlier ones (a random
// DAG, bench_shaping's); or that DAG with each kernel also after the one before it on its lane
// of 17 (what shaping adds).
enum class Form { chains, random, random_on_lanes };

const char* name_of(Form form) {
  return form == Form::chains ? "on 17 chains"
         : form == Form::random ? "as a random DAG"
                                : "as a random DAG on 17 lanes";
}

cudaGraph_t graph_of(int n, Form form) {
  constexpr int lanes = 17;
  cudaGraph_t g;
  BENCH_CUDA(cudaGraphCreate(&g, 0));
  const bench::Parents random = form == Form::chains ? bench::Parents(n) : bench::random_dag(n);
  std::vector<cudaGraphNode_t> nodes;
  int value = 0;
  void* args[] = {&value};
  const cudaKernelNodeParams p = bench::one_thread_node(&bench::empty_kernel, args);
  for (int v = 0; v < n; ++v) {
    std::set<cudaGraphNode_t> after;
    if (form != Form::random && v >= lanes) after.insert(nodes[v - lanes]);
    for (const int q : random[v]) after.insert(nodes[q]);
    const std::vector<cudaGraphNode_t> deps(after.begin(), after.end());
    cudaGraphNode_t node;
    BENCH_CUDA(cudaGraphAddKernelNode(&node, g, deps.data(), deps.size(), &p));
    nodes.push_back(node);
  }
  return g;
}

void measure(int n, Form form) {
  const Clock::time_point origin = Clock::now();
  const auto now_us = [&] {
    return std::chrono::duration<double, std::micro>(Clock::now() - origin).count();
  };
  cudaStream_t s;
  BENCH_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaGraph_t one = graph_of(1, Form::chains);
  cudaGraphExec_t small;
  BENCH_CUDA(cudaGraphInstantiate(&small, one, 0));
  cudaEvent_t done;
  BENCH_CUDA(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  std::atomic<bool> stop{false};
  std::vector<Call> calls;
  calls.reserve(1 << 20);
  std::vector<Step> steps;
  std::thread builder([&] {
    BENCH_CUDA(cudaSetDevice(0));
    cudaStream_t own;
    BENCH_CUDA(cudaStreamCreateWithFlags(&own, cudaStreamNonBlocking));
    const auto step = [&](const char* name, const std::function<void()>& fn) {
      const double begin = now_us();
      fn();
      steps.push_back({name, begin, now_us()});
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    };
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    for (int round = 0; round < 2; ++round) {
      cudaGraph_t g;
      cudaGraphExec_t exec;
      step("add nodes", [&] { g = graph_of(n, form); });
      step("instantiate", [&] { BENCH_CUDA(cudaGraphInstantiate(&exec, g, 0)); });
      step("upload (own stream)", [&] {
        BENCH_CUDA(cudaGraphUpload(exec, own));
        BENCH_CUDA(cudaStreamSynchronize(own));
      });
      step("launch (own stream)", [&] {
        BENCH_CUDA(cudaGraphLaunch(exec, own));
        BENCH_CUDA(cudaStreamSynchronize(own));
      });
      step("exec destroy", [&] { BENCH_CUDA(cudaGraphExecDestroy(exec)); });
      step("graph destroy", [&] { BENCH_CUDA(cudaGraphDestroy(g)); });
    }
    BENCH_CUDA(cudaStreamDestroy(own));
    stop = true;
  });
  while (!stop) {
    const double at = now_us();
    BENCH_CUDA(cudaGraphLaunch(small, s));
    BENCH_CUDA(cudaEventRecord(done, s));
    calls.push_back({at, now_us() - at});
    BENCH_CUDA(cudaEventSynchronize(done));
  }
  builder.join();
  std::vector<double> took;
  for (const Call& c : calls) took.push_back(c.took_us);
  std::printf("\n== %d kernels %s: %zu launch-and-record calls, median %.1f us\n", n,
              name_of(form), calls.size(), bench::median(took));
  for (const Step& st : steps) {
    double slowest = 0;
    for (const Call& c : calls) {
      if (c.at_us + c.took_us >= st.begin_us && c.at_us <= st.end_us) {
        slowest = std::max(slowest, c.took_us);
      }
    }
    std::printf("  %-20s %9.1f us; slowest call meanwhile %8.1f us\n", st.name,
                st.end_us - st.begin_us, slowest);
  }
  BENCH_CUDA(cudaEventDestroy(done));
  BENCH_CUDA(cudaGraphExecDestroy(small));
  BENCH_CUDA(cudaGraphDestroy(one));
  BENCH_CUDA(cudaStreamDestroy(s));
}

}  // namespace

int main() {
  if (bench::no_gpu("bench_instantiate_stall")) return 0;
  BENCH_CUDA(cudaSetDevice(0));
  std::printf("bench_instantiate_stall: another thread's graph work against this thread's "
              "launches\n");
  for (const int n : {1000, 4000}) {
    for (const Form form : {Form::chains, Form::random, Form::random_on_lanes}) measure(n, form);
  }
  return 0;
}
