// Executables launched from the device (issue 35, item 2) against raw CUDA in the same
// process, alternating trials:
// (1) a loop of one-graph steps (measured second): every step launched from the host
//     (cudaGraphLaunch per step, what a host-driven loop pays at least), or launched once the
//     host read back whether to go on (what a loop whose end the device decides pays), against
//     each step tail-launching the next from the device, by hand and through cmdgraph
//     (device_launch.cuh's launch_again);
// (2) fire-and-forget (measured first): a graph whose kernel launches another beside it,
//     against the host launching the two graphs one after the other.
// Compiled with relocatable device code, as device launch needs (bench/meson.build).
#include "bench_support.cuh"

#include <cmdgraph/cmdgraph.hpp>
#include <cmdgraph/device_launch.cuh>

#include <cstdio>
#include <vector>

using namespace cmdgraph;

namespace {

constexpr int steps = 1000;  // steps of the loop in (1)
constexpr int pairs = 200;   // launches of the pair in (2)
constexpr int trials = 15;

__global__ void count_step(int* counter) { ++*counter; }

// A step that launches its own graph again until `steps` ran; a refusal stops the loop and
// is kept in counter[1].
__global__ void raw_loop_step(int* counter) {
  if (++counter[0] < steps) {
    const cudaError_t s = cudaGraphLaunch(cudaGetCurrentGraphExec(), cudaStreamGraphTailLaunch);
    if (s != cudaSuccess) counter[1] = s;
  }
}
__global__ void loop_step(int* counter) {
  if (++counter[0] < steps) {
    const cudaError_t s = device::launch_again();
    if (s != cudaSuccess) counter[1] = s;
  }
}

__global__ void raw_launch_beside(cudaGraphExec_t child, int* status) {
  const cudaError_t s = cudaGraphLaunch(child, cudaStreamGraphFireAndForget);
  if (s != cudaSuccess) *status = s;
}
__global__ void launch_beside(DeviceExecutable child, int* status) {
  const cudaError_t s = device::launch(child);
  if (s != cudaSuccess) *status = s;
}

// A graph of one one-thread node of `kernel` with `args`; for device launch when `device`.
template <class... P>
cudaGraphExec_t one_node_graph(void (*kernel)(P...), void** args, bool device,
                               cudaStream_t stream) {
  cudaGraph_t g;
  BENCH_CUDA(cudaGraphCreate(&g, 0));
  const cudaKernelNodeParams p = bench::one_thread_node(kernel, args);
  cudaGraphNode_t node;
  BENCH_CUDA(cudaGraphAddKernelNode(&node, g, nullptr, 0, &p));
  cudaGraphExec_t exec;
  BENCH_CUDA(cudaGraphInstantiateWithFlags(&exec, g,
                                           device ? cudaGraphInstantiateFlagDeviceLaunch : 0));
  BENCH_CUDA(cudaGraphUpload(exec, stream));
  BENCH_CUDA(cudaGraphDestroy(g));
  return exec;
}

// Reads the loop's counter and refusal; exits when the loop did not run every step.
void check_loop(const Buffer<int>& counter, const char* who) {
  int got[2] = {0, 0};
  BENCH_CUDA(cudaMemcpy(got, counter.data(), sizeof got, cudaMemcpyDeviceToHost));
  if (got[0] != steps || got[1] != 0) {
    std::fprintf(stderr, "%s: %d steps ran of %d (refusal %d)\n", who, got[0], steps, got[1]);
    std::exit(1);
  }
}

// (1), run second: a loop of steps, from the host and tail-launched from the device.
void loop_steps(Device gpu, Queue& queue, const Buffer<int>& counter) {
  const cudaStream_t stream = queue.native_handle();
  int* count = counter.data();
  void* count_args[] = {&count};
  cudaGraphExec_t host_step = one_node_graph(&count_step, count_args, false, stream);
  cudaGraphExec_t raw_loop = one_node_graph(&raw_loop_step, count_args, true, stream);
  CommandBuffer cmd("loop");
  cmd.launch(&loop_step, LaunchConfig{{1}, {1}}, count);
  Executable loop = compile(cmd, gpu, {.device_launch = true});
  int* decision = nullptr;  // where a host-driven loop reads whether to go on
  BENCH_CUDA(cudaMallocHost(&decision, sizeof(int)));
  std::vector<double> t_host, t_decided, t_raw, t_ours;
  for (int t = 0; t < trials; ++t) {
    BENCH_CUDA(cudaMemsetAsync(count, 0, 2 * sizeof(int), stream));
    BENCH_CUDA(cudaStreamSynchronize(stream));
    t_decided.push_back(bench::host_us([&] {
      do {
        BENCH_CUDA(cudaGraphLaunch(host_step, stream));
        BENCH_CUDA(cudaMemcpyAsync(decision, count, sizeof(int), cudaMemcpyDeviceToHost,
                                   stream));
        BENCH_CUDA(cudaStreamSynchronize(stream));
      } while (*decision < steps);
    }));
    check_loop(counter, "host-decided steps");
    BENCH_CUDA(cudaMemsetAsync(count, 0, 2 * sizeof(int), stream));
    BENCH_CUDA(cudaStreamSynchronize(stream));
    t_host.push_back(bench::host_us([&] {
      for (int s = 0; s < steps; ++s) BENCH_CUDA(cudaGraphLaunch(host_step, stream));
      BENCH_CUDA(cudaStreamSynchronize(stream));
    }));
    check_loop(counter, "host-launched steps");
    BENCH_CUDA(cudaMemsetAsync(count, 0, 2 * sizeof(int), stream));
    BENCH_CUDA(cudaStreamSynchronize(stream));
    t_raw.push_back(bench::host_us([&] {
      BENCH_CUDA(cudaGraphLaunch(raw_loop, stream));
      BENCH_CUDA(cudaStreamSynchronize(stream));
    }));
    check_loop(counter, "raw tail-launched steps");
    BENCH_CUDA(cudaMemsetAsync(count, 0, 2 * sizeof(int), stream));
    BENCH_CUDA(cudaStreamSynchronize(stream));
    t_ours.push_back(bench::host_us([&] { loop.launch(queue).wait(); }));
    check_loop(counter, "cmdgraph tail-launched steps");
  }
  bench::header("a loop of 1,000 one-kernel graphs (median of 15, host wall per step)");
  bench::row("step launched by the host / by the step before", bench::median(t_host) / steps,
             bench::median(t_ours) / steps, "us", "");
  bench::row("host reads whether to go on / the step decides", bench::median(t_decided) / steps,
             bench::median(t_ours) / steps, "us", "");
  bench::row("step launched by the step before (tail launch)", bench::median(t_raw) / steps,
             bench::median(t_ours) / steps, "us", "1.0x of raw");
  BENCH_CUDA(cudaFreeHost(decision));
  for (cudaGraphExec_t e : {host_step, raw_loop}) BENCH_CUDA(cudaGraphExecDestroy(e));
}

// (2), run first: in a process where a graph that tail-launched itself had run, CUDA launched
// some device-launchable graphs made later 1.26-1.35x slower fire-and-forget, raw ones
// included (tools/probes/fire_and_forget.cu): measured before any loop ran.
void fire_and_forget(Device gpu, Queue& queue, const Buffer<int>& counter) {
  const cudaStream_t stream = queue.native_handle();
  int* count = counter.data();
  void* count_args[] = {&count};
  // The pair launched by the host, one after the other, against the first launching the
  // second from its kernel.
  Buffer<int> status(gpu, 1);
  BENCH_CUDA(cudaMemset(status.data(), 0, sizeof(int)));
  int* status_word = status.data();
  cudaGraphExec_t child = one_node_graph(&count_step, count_args, true, stream);
  cudaGraphExec_t first = one_node_graph(&count_step, count_args, false, stream);
  void* beside_args[] = {&child, &status_word};
  cudaGraphExec_t raw_parent = one_node_graph(&raw_launch_beside, beside_args, false, stream);
  CommandBuffer c("child");
  c.launch(&count_step, LaunchConfig{{1}, {1}}, count);
  Executable ours_child = compile(c, gpu, {.device_launch = true});
  CommandBuffer p("parent");
  p.launch(&launch_beside, LaunchConfig{{1}, {1}}, ours_child.device_executable(queue),
           status_word);
  Executable ours_parent = compile(p, gpu);
  // Where a difference would come from: the raw parent launching cmdgraph's child.
  void* ours_child_graph = ours_child.device_executable(queue).graph;
  void* mixed_args[] = {&ours_child_graph, &status_word};
  cudaGraphExec_t mixed_parent = one_node_graph(&raw_launch_beside, mixed_args, false, stream);
  // Probe: the raw child instantiated as compile() instantiates (with params, uploading).
  cudaGraphExec_t child_with_params;
  {
    cudaGraph_t g;
    BENCH_CUDA(cudaGraphCreate(&g, 0));
    const cudaKernelNodeParams kp = bench::one_thread_node(&count_step, count_args);
    cudaGraphNode_t node;
    BENCH_CUDA(cudaGraphAddKernelNode(&node, g, nullptr, 0, &kp));
    cudaGraphInstantiateParams ip{};
    ip.flags = cudaGraphInstantiateFlagDeviceLaunch | cudaGraphInstantiateFlagUpload;
    ip.uploadStream = stream;
    BENCH_CUDA(cudaGraphInstantiateWithParams(&child_with_params, g, &ip));
    BENCH_CUDA(cudaGraphDestroy(g));
  }
  void* probe_args[] = {&child_with_params, &status_word};
  cudaGraphExec_t probe_parent = one_node_graph(&raw_launch_beside, probe_args, false, stream);
  std::vector<double> t_probe;
  std::vector<double> t_pair, t_raw_beside, t_ours_beside, t_mixed;
  for (int t = 0; t < trials; ++t) {
    t_pair.push_back(bench::device_us(stream, [&] {
      for (int i = 0; i < pairs; ++i) {
        BENCH_CUDA(cudaGraphLaunch(first, stream));
        BENCH_CUDA(cudaGraphLaunch(child, stream));
      }
    }));
    t_raw_beside.push_back(bench::device_us(stream, [&] {
      for (int i = 0; i < pairs; ++i) BENCH_CUDA(cudaGraphLaunch(raw_parent, stream));
    }));
    t_ours_beside.push_back(bench::device_us(stream, [&] {
      for (int i = 0; i < pairs; ++i) ours_parent.launch(queue);
    }));
    t_mixed.push_back(bench::device_us(stream, [&] {
      for (int i = 0; i < pairs; ++i) BENCH_CUDA(cudaGraphLaunch(mixed_parent, stream));
    }));
    t_probe.push_back(bench::device_us(stream, [&] {
      for (int i = 0; i < pairs; ++i) BENCH_CUDA(cudaGraphLaunch(probe_parent, stream));
    }));
  }
  int refused = 0;
  BENCH_CUDA(cudaMemcpy(&refused, status_word, sizeof refused, cudaMemcpyDeviceToHost));
  if (refused != 0) {
    std::fprintf(stderr, "a fire-and-forget launch was refused: %d\n", refused);
    std::exit(1);
  }
  bench::header("two one-kernel graphs, 200 times (median of 15, device time per pair)");
  bench::row("host launches both / the first launches the second", bench::median(t_pair) / pairs,
             bench::median(t_ours_beside) / pairs, "us", "");
  bench::row("the first launches the second (fire-and-forget)",
             bench::median(t_raw_beside) / pairs, bench::median(t_ours_beside) / pairs, "us",
             "1.0x of raw");
  bench::row("probe: raw second instantiated with params and upload",
             bench::median(t_raw_beside) / pairs, bench::median(t_probe) / pairs, "us", "");
  bench::row("the same, the raw first launching cmdgraph's second",
             bench::median(t_raw_beside) / pairs, bench::median(t_mixed) / pairs, "us", "");

  for (cudaGraphExec_t e : {child, first, raw_parent, mixed_parent, child_with_params,
                            probe_parent}) {
    BENCH_CUDA(cudaGraphExecDestroy(e));
  }
}

}  // namespace

int main() {
  if (bench::no_gpu("bench_device_launch")) return 0;
  const Device gpu = Device::cuda(0);
  Queue queue(gpu);
  Buffer<int> counter(gpu, 2);
  fire_and_forget(gpu, queue, counter);
  loop_steps(gpu, queue, counter);
  return 0;
}
