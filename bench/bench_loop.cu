// cmdgraph's conditional commands against hand-built conditional nodes of the same shape, in
// the same process: loop_while against a WHILE node (and against the loop's alternative
// without one, re-launching the body's executable and checking the condition on the host after
// every pass), chains of if_else and switch_on against IF (with ELSE) and SWITCH nodes; and
// each on the streams backend, which launches every conditional command as a graph of its own,
// against the graph backend.
#include "bench_support.cuh"

#include <cmdgraph/cmdgraph.hpp>

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

using namespace cmdgraph;

namespace {

constexpr unsigned passes = 1000;

// Counts passes: true (and one more pass) while fewer than `limit` have started.
struct CountTo {
  unsigned* started;
  unsigned limit;
  __host__ __device__ bool operator()() const { return (*started)++ < limit; }
};

__global__ void raw_condition(unsigned* started, unsigned limit,
                              cudaGraphConditionalHandle handle) {
  cudaGraphSetConditional(handle, (*started)++ < limit ? 1u : 0u);
}

// The same loop by hand: condition kernel, WHILE node, body of one empty kernel followed by
// the condition kernel again.
cudaGraphExec_t raw_loop(unsigned* started) {
  cudaGraph_t g;
  BENCH_CUDA(cudaGraphCreate(&g, 0));
  cudaGraphConditionalHandle handle;
  BENCH_CUDA(cudaGraphConditionalHandleCreate(&handle, g, 0, 0));
  unsigned limit = passes;
  void* condition_args[] = {&started, &limit, &handle};
  const cudaKernelNodeParams condition = bench::one_thread_node(&raw_condition, condition_args);
  cudaGraphNode_t first, loop, work, again;
  BENCH_CUDA(cudaGraphAddKernelNode(&first, g, nullptr, 0, &condition));
  cudaGraphNodeParams p{};
  p.type = cudaGraphNodeTypeConditional;
  p.conditional.handle = handle;
  p.conditional.type = cudaGraphCondTypeWhile;
  p.conditional.size = 1;
  BENCH_CUDA(cudaGraphAddNode(&loop, g, &first, nullptr, 1, &p));
  cudaGraph_t body = p.conditional.phGraph_out[0];
  int arg = 0;
  void* empty_args[] = {&arg};
  const cudaKernelNodeParams empty = bench::one_thread_node(&bench::empty_kernel, empty_args);
  BENCH_CUDA(cudaGraphAddKernelNode(&work, body, nullptr, 0, &empty));
  BENCH_CUDA(cudaGraphAddKernelNode(&again, body, &work, 1, &condition));
  cudaGraphExec_t exec;
  BENCH_CUDA(cudaGraphInstantiate(&exec, g, 0));
  BENCH_CUDA(cudaGraphDestroy(g));
  return exec;
}

unsigned read(const unsigned* device_value) {
  unsigned v = 0;
  BENCH_CUDA(cudaMemcpy(&v, device_value, sizeof v, cudaMemcpyDeviceToHost));
  return v;
}

// ---- Chains of ifs and switches ----

constexpr unsigned chain = 100;  // conditional commands per launch
constexpr unsigned cases = 4;    // of each switch

// The branch or case each command of a chain takes: decided on the device from `*flag`.
struct Even {
  const unsigned* flag;
  __host__ __device__ bool operator()() const { return *flag % 2 == 0; }
};
struct Modulo {
  const unsigned* flag;
  __host__ __device__ int operator()() const { return static_cast<int>(*flag % cases); }
};
__global__ void raw_even(const unsigned* flag, cudaGraphConditionalHandle handle) {
  cudaGraphSetConditional(handle, *flag % 2 == 0 ? 1u : 0u);
}
__global__ void raw_modulo(const unsigned* flag, cudaGraphConditionalHandle handle) {
  cudaGraphSetConditional(handle, *flag % cases);
}
// What every branch or case does, raw and ours: counts its runs.
__global__ void raw_count(unsigned* runs) { *runs += 1; }

// `chain` conditional nodes of `type` (IF with ELSE, or SWITCH) one after another, each after
// its condition kernel; body k of every node counts into runs[k].
cudaGraphExec_t raw_chain(cudaGraphConditionalNodeType type, const unsigned* flag,
                          unsigned* runs) {
  const unsigned bodies = type == cudaGraphCondTypeSwitch ? cases : 2;
  cudaGraph_t g;
  BENCH_CUDA(cudaGraphCreate(&g, 0));
  cudaGraphNode_t last = nullptr;
  for (unsigned i = 0; i < chain; ++i) {
    cudaGraphConditionalHandle handle;
    BENCH_CUDA(cudaGraphConditionalHandleCreate(&handle, g, 0, 0));
    void* condition_args[] = {&flag, &handle};
    const cudaKernelNodeParams condition =
        type == cudaGraphCondTypeSwitch ? bench::one_thread_node(&raw_modulo, condition_args)
                                        : bench::one_thread_node(&raw_even, condition_args);
    cudaGraphNode_t check;
    BENCH_CUDA(cudaGraphAddKernelNode(&check, g, last ? &last : nullptr, last ? 1 : 0,
                                      &condition));
    cudaGraphNodeParams p{};
    p.type = cudaGraphNodeTypeConditional;
    p.conditional.handle = handle;
    p.conditional.type = type;
    p.conditional.size = bodies;
    BENCH_CUDA(cudaGraphAddNode(&last, g, &check, nullptr, 1, &p));
    for (unsigned b = 0; b < bodies; ++b) {
      unsigned* into = runs + b;
      void* count_args[] = {&into};
      const cudaKernelNodeParams count = bench::one_thread_node(&raw_count, count_args);
      cudaGraphNode_t work;
      BENCH_CUDA(cudaGraphAddKernelNode(&work, p.conditional.phGraph_out[b], nullptr, 0, &count));
    }
  }
  cudaGraphExec_t exec;
  BENCH_CUDA(cudaGraphInstantiate(&exec, g, 0));
  BENCH_CUDA(cudaGraphDestroy(g));
  return exec;
}

// The same chain recorded with cmdgraph: if_else or switch_on commands, each after the last.
cmdgraph::CommandBuffer our_chain(bool switches, const unsigned* flag, unsigned* runs) {
  cmdgraph::CommandBuffer cmd(switches ? "switches" : "if_elses");
  cmdgraph::Command last;
  for (unsigned i = 0; i < chain; ++i) {
    std::vector<cmdgraph::CommandBuffer> bodies;
    for (unsigned b = 0; b < (switches ? cases : 2); ++b) {
      bodies.emplace_back("body");
      bodies.back().launch(&raw_count, cmdgraph::LaunchConfig{{1}, {1}}, runs + b);
    }
    cmdgraph::Command c = switches ? cmd.switch_on(Modulo{flag}, bodies)
                                   : cmd.if_else(Even{flag}, bodies[0], bodies[1]);
    if (last.valid()) c.after(last);
    last = c;
  }
  return cmd;
}

std::vector<unsigned> read_runs(const unsigned* runs) {
  std::vector<unsigned> v(cases);
  BENCH_CUDA(cudaMemcpy(v.data(), runs, cases * sizeof(unsigned), cudaMemcpyDeviceToHost));
  return v;
}

// Raw chain against ours on the graph and on the streams backend, `flag` picking body
// `expected` of each command; returns whether every launch ran exactly that body each time.
bool compare_chain(cmdgraph::Queue& q, bool switches, unsigned flag_value, unsigned expected) {
  using namespace cmdgraph;
  const Device gpu = q.device();
  cudaStream_t stream = q.native_handle();
  Buffer<unsigned> flag(gpu, 1), runs(gpu, cases);
  BENCH_CUDA(cudaMemcpy(flag.data(), &flag_value, sizeof flag_value, cudaMemcpyHostToDevice));
  cudaGraphExec_t raw = raw_chain(switches ? cudaGraphCondTypeSwitch : cudaGraphCondTypeIf,
                                  flag.data(), runs.data());
  CommandBuffer for_graph = our_chain(switches, flag.data(), runs.data());
  CommandBuffer for_streams = our_chain(switches, flag.data(), runs.data());
  Executable graph = compile(for_graph, gpu, {.backend = Backend::cuda_graph});
  Executable streams = compile(for_streams, gpu, {.backend = Backend::streams});

  bool right = true;
  auto timed = [&](const std::function<void()>& launch) {
    BENCH_CUDA(cudaMemsetAsync(runs.data(), 0, cases * sizeof(unsigned), stream));
    const double us = bench::device_us(stream, launch);
    std::vector<unsigned> want(cases, 0);
    want[expected] = chain;
    right &= read_runs(runs.data()) == want;
    return us;
  };
  std::vector<double> raw_us, graph_us, streams_us;
  for (int trial = 0; trial < 11; ++trial) {
    raw_us.push_back(timed([&] { BENCH_CUDA(cudaGraphLaunch(raw, stream)); }));
    graph_us.push_back(timed([&] { graph.launch(q); }));
    streams_us.push_back(timed([&] { streams.launch(q); }));
  }
  const char* what = switches ? "switch_on (4 cases)" : "if_else";
  bench::header(switches ? "switch_on: a conditional SWITCH node"
                         : "if_else: a conditional IF node with an ELSE body");
  bench::row(std::string(what) + ", time per command", bench::median(raw_us) / chain,
             bench::median(graph_us) / chain, "us", "<= 1.05x");
  std::printf("%-52s %12.2f %12.2f us  %.3fx the graph backend's\n",
              (std::string("  ") + what + " on the streams backend").c_str(),
              bench::median(graph_us) / chain, bench::median(streams_us) / chain,
              bench::median(streams_us) / bench::median(graph_us));
  std::printf("%-52s %s\n", "  body taken by every command, every launch",
              right ? "correct" : "WRONG");
  BENCH_CUDA(cudaGraphExecDestroy(raw));
  return right;
}

}  // namespace

int main() {
  if (bench::no_gpu("bench_loop")) return 0;
  std::printf("bench_loop on %s; %u passes of one empty kernel per loop launch, chains of %u "
              "ifs or switches; medians of 11\n",
              Device::cuda(0).properties().name.c_str(), passes, chain);
  const Device gpu = Device::cuda(0);
  Queue q(gpu);
  cudaStream_t stream = q.native_handle();
  Buffer<unsigned> started(gpu, 1);

  cudaGraphExec_t raw = raw_loop(started.data());
  CommandBuffer body("pass");
  body.launch(&bench::empty_kernel, LaunchConfig{{1}, {1}}, 0);
  CommandBuffer cmd("loop");
  auto reset = cmd.fill(started, 0u, 1);
  cmd.loop_while(body, CountTo{started.data(), passes}).after(reset);
  Executable ours = compile(cmd, gpu);

  std::vector<double> raw_us, ours_us;
  bool counted = true;
  for (int trial = 0; trial < 11; ++trial) {
    BENCH_CUDA(cudaMemsetAsync(started.data(), 0, sizeof(unsigned), stream));
    raw_us.push_back(bench::device_us(stream, [&] { BENCH_CUDA(cudaGraphLaunch(raw, stream)); }));
    counted &= read(started.data()) == passes + 1;
    ours_us.push_back(bench::device_us(stream, [&] { ours.launch(q); }));
    counted &= read(started.data()) == passes + 1;
  }
  bench::header("loop_while: a conditional WHILE node");
  bench::row("time per pass", bench::median(raw_us) / passes, bench::median(ours_us) / passes,
             "us", "<= 1.05x");

  // Without a conditional node: one launch per pass, the host reading the condition after each.
  CommandBuffer one_pass("one pass");
  auto work = one_pass.launch(&bench::empty_kernel, LaunchConfig{{1}, {1}}, 0);
  HostBuffer<unsigned> seen(1);
  one_pass.copy(seen, started, 1).after(work);
  Executable pass_exe = compile(one_pass, gpu);
  std::vector<double> host_us;
  for (int trial = 0; trial < 5; ++trial) {
    host_us.push_back(bench::host_us([&] {
      for (unsigned k = 0; k < passes; ++k) pass_exe.launch(q).wait();
    }));
  }
  std::printf("%-52s %12s %12.2f us  (%.1fx the loop's)\n",
              "  re-launch + host check per pass instead", "", bench::median(host_us) / passes,
              bench::median(host_us) / bench::median(ours_us));
  std::printf("%-52s %s\n", "  passes counted by both loops", counted ? "correct" : "WRONG");

  // The same loop on the streams backend: one graph of its own per launch, on the queue's stream.
  CommandBuffer streams_cmd("loop");
  CommandBuffer streams_body("pass");
  streams_body.launch(&bench::empty_kernel, LaunchConfig{{1}, {1}}, 0);
  auto streams_reset = streams_cmd.fill(started, 0u, 1);
  streams_cmd.loop_while(streams_body, CountTo{started.data(), passes}).after(streams_reset);
  Executable on_streams = compile(streams_cmd, gpu, {.backend = Backend::streams});
  std::vector<double> graph_us, streams_us;
  for (int trial = 0; trial < 11; ++trial) {
    graph_us.push_back(bench::device_us(stream, [&] { ours.launch(q); }));
    counted &= read(started.data()) == passes + 1;
    streams_us.push_back(bench::device_us(stream, [&] { on_streams.launch(q); }));
    counted &= read(started.data()) == passes + 1;
  }
  std::printf("%-52s %12.2f %12.2f us  %.3fx the graph backend's\n",
              "  loop_while on the streams backend, time per pass",
              bench::median(graph_us) / passes, bench::median(streams_us) / passes,
              bench::median(streams_us) / bench::median(graph_us));
  std::printf("%-52s %s\n", "  passes counted on both backends", counted ? "correct" : "WRONG");

  // Flags 4 and 7 take the then and the else branch; 6 and 9 cases 2 and 1.
  bool right = counted;
  right &= compare_chain(q, false, 4, 0);
  right &= compare_chain(q, false, 7, 1);
  right &= compare_chain(q, true, 6, 2);
  right &= compare_chain(q, true, 9, 1);
  BENCH_CUDA(cudaGraphExecDestroy(raw));
  return right ? 0 : 1;
}
