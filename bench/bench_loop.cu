// cmdgraph's loop_while against a hand-built conditional WHILE node of the same shape, in the
// same process, and against the loop's alternative without one: re-launching the body's
// executable and checking the condition on the host after every pass.
#include "bench_support.cuh"

#include <cmdgraph/cmdgraph.hpp>

#include <cstdio>
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

}  // namespace

int main() {
  if (bench::no_gpu("bench_loop")) return 0;
  std::printf("bench_loop on %s; %u passes of one empty kernel per launch; medians\n",
              Device::cuda(0).properties().name.c_str(), passes);
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
  BENCH_CUDA(cudaGraphExecDestroy(raw));
  return counted ? 0 : 1;
}
