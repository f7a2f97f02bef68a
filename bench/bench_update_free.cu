// bench_update_free: update-free kernels (KernelCommand::update_free), a chain of 1,000
// one-thread kernels whose every argument changes each frame. Host time of a frame (the
// updates, through writers in an update frame or not or by handle, and the launch) against the
// launch of the same executable with nothing updated, and against what a careful raw user does
// (cudaGraphExecKernelNodeSetParams of every node, then cudaGraphLaunch); the re-recorded frame
// with and without the option; and what the graph costs the device (a replay with nothing
// changed, one with everything changed) against the same chain compiled without the option.
// Medians of 15 alternating trials.
#include "bench_support.cuh"

#include <cmdgraph/cmdgraph.hpp>

#include <cstdio>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

using namespace cmdgraph;

namespace {

__global__ void store(int i, int value, int* out) { out[i] = value; }

constexpr int n = 1000;
constexpr int trials = 15;

int value_of(int i, int frame) { return 1000 * frame + i; }

// The chain of n stores with frame `frame`'s values, each update-free or not.
std::vector<KernelCommand<int, int, int*>> record(CommandBuffer& cmd, int* out, int frame,
                                                 bool update_free) {
  std::vector<KernelCommand<int, int, int*>> kernels;
  for (int i = 0; i < n; ++i) {
    auto k = cmd.launch(&store, LaunchConfig{{1}, {1}}, i, value_of(i, frame), out);
    if (i) k.after(kernels.back());
    if (update_free) k.update_free();
    kernels.push_back(k);
  }
  return kernels;
}

bool holds_frame(const Buffer<int>& out, int frame) {
  std::vector<int> seen(n);
  BENCH_CUDA(cudaMemcpy(seen.data(), out.data(), sizeof(int) * n, cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) {
    if (seen[static_cast<std::size_t>(i)] != value_of(i, frame)) return false;
  }
  return true;
}

void by_handle() {
  const Device gpu = Device::cuda(0);
  Buffer<int> out(gpu, n);
  int* ptr = out.data();
  CommandBuffer cmd("frame");
  const auto kernels = record(cmd, ptr, 0, true);
  Executable exe = compile(cmd, gpu, {.backend = Backend::cuda_graph});
  Queue q(gpu);
  auto s = static_cast<cudaStream_t>(q.native_handle());
  cudaGraph_t g;
  BENCH_CUDA(cudaGraphCreate(&g, 0));
  const std::vector<cudaGraphNode_t> nodes = bench::kernel_chain(
      g, &store, n, [&](int i) { return std::tuple{i, value_of(i, 0), ptr}; });
  cudaGraphExec_t exec;
  BENCH_CUDA(cudaGraphInstantiate(&exec, g, 0));
  BENCH_CUDA(cudaGraphUpload(exec, s));

  std::vector<ArgumentWriter<int, int, int*>> writers;
  for (const auto& k : kernels) writers.push_back(exe.arguments(k));
  // Writes through the writers, in an update frame or not: the frame's host time, its writes
  // alone and the launch that hands them over.
  struct Way {
    std::vector<double> frame, writes, handing;
  } plain, framed, again;
  bool correct = true;
  int frame = 0;
  auto write_frame = [&](Way& way, bool in_frame) {
    ++frame;
    way.writes.push_back(bench::host_us([&] {
      std::optional<UpdateFrame> held;
      if (in_frame) held = exe.update_frame();
      for (int i = 0; i < n; ++i) writers[std::size_t(i)].set(i, value_of(i, frame), ptr);
    }));
    way.handing.push_back(bench::host_us([&] { exe.launch(q); }));
    way.frame.push_back(way.writes.back() + way.handing.back());
    q.wait();
    correct = correct && holds_frame(out, frame);
  };
  std::vector<double> by_handle, launch_alone, raw;
  for (int t = 1; t <= trials; ++t) {
    write_frame(t % 2 ? plain : framed, t % 2 == 0);  // taking turns at going first
    write_frame(t % 2 ? framed : plain, t % 2 == 1);
    write_frame(again, true);  // a frame right after a frame: a loop of frames and launches
    ++frame;
    by_handle.push_back(bench::host_us([&] {
      for (int i = 0; i < n; ++i) exe.update(kernels[std::size_t(i)], i, value_of(i, frame), ptr);
      exe.launch(q);
    }));
    q.wait();
    correct = correct && holds_frame(out, frame);
    launch_alone.push_back(bench::host_us([&] { exe.launch(q); }));
    q.wait();
    raw.push_back(bench::host_us([&] {
      for (int i = 0; i < n; ++i) {
        int index = i, value = value_of(i, frame);
        void* args[] = {&index, &value, &ptr};
        const cudaKernelNodeParams p = bench::one_thread_node(&store, args);
        BENCH_CUDA(cudaGraphExecKernelNodeSetParams(exec, nodes[static_cast<std::size_t>(i)], &p));
      }
      BENCH_CUDA(cudaGraphLaunch(exec, s));
    }));
    BENCH_CUDA(cudaStreamSynchronize(s));
  }
  const double alone = bench::median(launch_alone);
  for (const auto& [way, name] : {std::pair{&plain, "1,000 new arguments written + launch"},
                                  std::pair{&framed, "the same in an update frame"},
                                  std::pair{&again, "the same, the frame after a frame"}}) {
    const double mine = bench::median(way->frame);
    bench::row(std::string(name) + ", vs SetParams", bench::median(raw), mine, "us", "");
    std::printf("%-52s %12.2f %12.2f %-5s %+8.2f   <= 20 us beyond the launch; %s\n",
                "  the same launch with nothing written", alone, mine, "us", mine - alone,
                correct ? "correct" : "WRONG");
    std::printf("%-52s %12s %12.2f %-5s (median of the launches handing them over: %.2f us)\n",
                "  the 1,000 writes alone", "", bench::median(way->writes), "us",
                bench::median(way->handing));
  }
  bench::row("1,000 updates by handle + launch, vs SetParams", bench::median(raw),
             bench::median(by_handle), "us", "");
  BENCH_CUDA(cudaGraphExecDestroy(exec));
  BENCH_CUDA(cudaGraphDestroy(g));
}

void rerecorded() {
  const Device gpu = Device::cuda(0);
  Buffer<int> out(gpu, n);
  CommandBuffer first_free("frame"), first_plain("frame");
  record(first_free, out.data(), 0, true);
  record(first_plain, out.data(), 0, false);
  Executable free_exe = compile(first_free, gpu, {.backend = Backend::cuda_graph});
  Executable plain_exe = compile(first_plain, gpu, {.backend = Backend::cuda_graph});
  Queue q(gpu);
  std::vector<double> with, without;
  bool correct = true;
  for (int frame = 1; frame <= trials; ++frame) {
    without.push_back(bench::host_us([&] {
      CommandBuffer cmd("frame");
      record(cmd, out.data(), frame, false);
      plain_exe.update(cmd);
      plain_exe.launch(q);
    }));
    q.wait();
    with.push_back(bench::host_us([&] {
      CommandBuffer cmd("frame");
      record(cmd, out.data(), frame, true);
      free_exe.update(cmd);
      free_exe.launch(q);
    }));
    q.wait();
    correct = correct && holds_frame(out, frame);
  }
  bench::row("re-record + update + launch, vs without the option", bench::median(without),
             bench::median(with), "us", correct ? "correct" : "WRONG");
}

void replay() {
  const Device gpu = Device::cuda(0);
  Buffer<int> out(gpu, n);
  CommandBuffer free_cmd("frame"), plain_cmd("frame");
  const auto kernels = record(free_cmd, out.data(), 0, true);
  record(plain_cmd, out.data(), 0, false);
  Executable free_exe = compile(free_cmd, gpu, {.backend = Backend::cuda_graph});
  Executable plain_exe = compile(plain_cmd, gpu, {.backend = Backend::cuda_graph});
  Queue q(gpu);
  auto s = static_cast<cudaStream_t>(q.native_handle());
  for (int warm = 0; warm < 3; ++warm) {
    free_exe.launch(q);
    plain_exe.launch(q);
  }
  q.wait();
  std::vector<double> plain, unchanged, changed;
  for (int t = 1; t <= trials; ++t) {
    plain.push_back(bench::device_us(s, [&] { plain_exe.launch(q); }));
    unchanged.push_back(bench::device_us(s, [&] { free_exe.launch(q); }));
    for (int i = 0; i < n; ++i) free_exe.update(kernels[i], i, value_of(i, t), out.data());
    changed.push_back(bench::device_us(s, [&] { free_exe.launch(q); }));
  }
  const double base = bench::median(plain);
  bench::row("replay, nothing changed, vs without the option", base,
             bench::median(unchanged), "us", "<= 1.05x");
  bench::row("replay, every argument changed, vs without", base, bench::median(changed), "us",
             "");
}

}  // namespace

int main() {
  if (bench::no_gpu("bench_update_free")) return 0;
  std::printf("bench_update_free on %s; a chain of %d one-thread kernels, medians of %d\n",
              Device::cuda(0).properties().name.c_str(), n, trials);
  bench::header("host time of a frame whose every argument changed");
  by_handle();
  rerecorded();
  bench::header("device time of a launch (events around it on the queue)");
  replay();
  return 0;
}
