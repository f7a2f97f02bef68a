// bench_frames: a frame re-recorded and updated, recording included, against what a careful
// raw CUDA user does each frame: set the changed kernel nodes alone (cudaGraphExecKernelNodeSetParams,
// knowing which changed), or capture the stream again and cudaGraphExecUpdate. Chains of 1,000
// and 10,000 one-thread kernels, 0%, 1%, 10% and 100% of them with new arguments each frame;
// medians of 15 alternating trials.
#include "bench_support.cuh"

#include <cmdgraph/cmdgraph.hpp>

#include <cstdio>
#include <string>
#include <tuple>
#include <vector>

using namespace cmdgraph;

namespace {

__global__ void store(int i, int value, int* out) { out[i] = value; }

// The value kernel i stores in frame `frame` when every `stride`-th kernel changes each frame
// (stride 0: none does).
int value_of(int i, int frame, int stride) {
  return stride != 0 && i % stride == 0 ? 1000 * frame + i : i;
}

void frames(int n, int percent) {
  const Device gpu = Device::cuda(0);
  Buffer<int> out(gpu, static_cast<std::size_t>(n));
  int* ptr = out.data();
  const int stride = percent == 0 ? 0 : 100 / percent;
  const int changed = stride == 0 ? 0 : (n + stride - 1) / stride;
  cudaStream_t s;
  BENCH_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

  auto record = [&](CommandBuffer& cmd, int frame) {
    Command prev;
    for (int i = 0; i < n; ++i) {
      auto k = cmd.launch(&store, LaunchConfig{{1}, {1}}, i, value_of(i, frame, stride), ptr);
      if (i) k.after(prev);
      prev = k;
    }
  };
  auto enqueue = [&](int frame) {
    for (int i = 0; i < n; ++i) store<<<1, 1, 0, s>>>(i, value_of(i, frame, stride), ptr);
  };
  CommandBuffer first("frame");
  record(first, 0);
  Executable exe = compile(first, gpu, {.backend = Backend::cuda_graph});

  // Raw: the chain built node by node (its nodes kept for SetParams of the changed ones), and
  // the same chain captured from the stream (updated by capturing again).
  cudaGraph_t g;
  BENCH_CUDA(cudaGraphCreate(&g, 0));
  const std::vector<cudaGraphNode_t> nodes = bench::kernel_chain(
      g, &store, n, [&](int i) { return std::tuple{i, value_of(i, 0, stride), ptr}; });
  cudaGraphExec_t exec;
  BENCH_CUDA(cudaGraphInstantiate(&exec, g, 0));
  cudaGraphExec_t captured = bench::captured(s, [&] { enqueue(0); });

  std::vector<double> ours, set_changed, recapture;
  int last = 0;
  for (int frame = 1; frame <= 15; ++frame) {
    ours.push_back(bench::host_us([&] {
      CommandBuffer cmd("frame");
      record(cmd, frame);
      const UpdateResult r = exe.update(cmd);
      if (r.commands_changed != static_cast<std::size_t>(changed) || r.reinstantiated) {
        std::fprintf(stderr, "frame %d: %zu commands changed, expected %d\n", frame,
                     r.commands_changed, changed);
        std::exit(1);
      }
    }));
    set_changed.push_back(bench::host_us([&] {
      for (int i = 0; stride != 0 && i < n; i += stride) {
        int index = i, value = value_of(i, frame, stride);
        void* args[] = {&index, &value, &ptr};
        const cudaKernelNodeParams p = bench::one_thread_node(&store, args);
        BENCH_CUDA(cudaGraphExecKernelNodeSetParams(exec, nodes[static_cast<std::size_t>(i)], &p));
      }
    }));
    recapture.push_back(bench::host_us([&] {
      cudaGraph_t again;
      BENCH_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
      enqueue(frame);
      BENCH_CUDA(cudaStreamEndCapture(s, &again));
      cudaGraphExecUpdateResultInfo info;
      BENCH_CUDA(cudaGraphExecUpdate(captured, again, &info));
      BENCH_CUDA(cudaGraphDestroy(again));
    }));
    last = frame;
  }

  // The updates took effect: the last frame's values everywhere.
  Queue q(gpu);
  exe.launch(q).wait();
  std::vector<int> seen(static_cast<std::size_t>(n));
  BENCH_CUDA(cudaMemcpy(seen.data(), ptr, sizeof(int) * seen.size(), cudaMemcpyDeviceToHost));
  bool correct = true;
  for (int i = 0; i < n; ++i) correct = correct && seen[static_cast<std::size_t>(i)] == value_of(i, last, stride);

  const std::string what = std::to_string(n) + " kernels, " + std::to_string(percent) + "% changed";
  const double mine = bench::median(ours);
  bench::row(what + ": vs capture + ExecUpdate", bench::median(recapture), mine, "us", "");
  if (changed > 0) {
    bench::row(what + ": vs SetParams of the " + std::to_string(changed), bench::median(set_changed),
               mine, "us", "");
  }
  std::printf("%-52s %.3f us per command, record included; %s\n", "  re-record + update",
              mine / n, correct ? "correct" : "WRONG");
  BENCH_CUDA(cudaGraphExecDestroy(exec));
  BENCH_CUDA(cudaGraphExecDestroy(captured));
  BENCH_CUDA(cudaGraphDestroy(g));
  BENCH_CUDA(cudaStreamDestroy(s));
}

}  // namespace

int main() {
  if (bench::no_gpu("bench_frames")) return 0;
  std::printf("bench_frames on %s; host time per frame, medians of 15 frames\n",
              Device::cuda(0).properties().name.c_str());
  bench::header("re-record + update(frame), recording included");
  for (int n : {1000, 10000}) {
    for (int percent : {0, 1, 10, 100}) frames(n, percent);
  }
  return 0;
}
