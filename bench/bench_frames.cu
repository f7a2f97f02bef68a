// bench_frames: a frame re-recorded and updated, recording included, against what a careful
// raw CUDA user does each frame: set the changed kernel nodes alone (cudaGraphExecKernelNodeSetParams,
// knowing which changed), or capture the stream again and cudaGraphExecUpdate. Chains of 1,000
// and 10,000 one-thread kernels, 0%, 1%, 10% and 100% of them with new arguments each frame;
// medians of 15 alternating trials. Then three structures in turn through an ExecutableCache, and a frame of 8 secondaries recorded
// on 8 threads.
#include "bench_support.cuh"

#include <cmdgraph/cmdgraph.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>
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

// Three structures in turn (chains of n, n + 8 and n + 16 kernels), 10% of the arguments new
// each frame: frames through an ExecutableCache against a careful raw user who keeps one
// executable per structure and either sets the changed nodes (knowing which) or captures the
// frame again and cudaGraphExecUpdates that structure's executable, and against compiling
// every frame.
void cycling(int n) {
  const Device gpu = Device::cuda(0);
  constexpr int shapes = 3, stride = 10;
  auto length = [n](int shape) { return n + 8 * shape; };
  Buffer<int> out(gpu, static_cast<std::size_t>(length(shapes - 1)));
  int* ptr = out.data();
  cudaStream_t s;
  BENCH_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  auto record = [&](CommandBuffer& cmd, int shape, int frame) {
    Command prev;
    for (int i = 0; i < length(shape); ++i) {
      auto k = cmd.launch(&store, LaunchConfig{{1}, {1}}, i, value_of(i, frame, stride), ptr);
      if (i) k.after(prev);
      prev = k;
    }
  };
  auto enqueue = [&](int shape, int frame) {
    for (int i = 0; i < length(shape); ++i) {
      store<<<1, 1, 0, s>>>(i, value_of(i, frame, stride), ptr);
    }
  };
  ExecutableCache cache;
  const CompileOptions options{.backend = Backend::cuda_graph};
  struct Raw {
    cudaGraph_t graph;
    std::vector<cudaGraphNode_t> nodes;
    cudaGraphExec_t exec, captured;
  };
  std::vector<Raw> raw(shapes);
  for (int shape = 0; shape < shapes; ++shape) {
    CommandBuffer cmd("frame");
    record(cmd, shape, 0);
    cache.acquire(cmd, gpu, options);
    Raw& r = raw[static_cast<std::size_t>(shape)];
    BENCH_CUDA(cudaGraphCreate(&r.graph, 0));
    r.nodes = bench::kernel_chain(r.graph, &store, length(shape), [&](int i) {
      return std::tuple{i, value_of(i, 0, stride), ptr};
    });
    BENCH_CUDA(cudaGraphInstantiate(&r.exec, r.graph, 0));
    r.captured = bench::captured(s, [&] { enqueue(shape, 0); });
  }

  std::vector<double> ours, fresh, set_changed, recapture;
  bool hits = true;
  for (int frame = 1; frame <= 15; ++frame) {
    const int shape = frame % shapes;
    Raw& r = raw[static_cast<std::size_t>(shape)];
    ours.push_back(bench::host_us([&] {
      CommandBuffer cmd("frame");
      record(cmd, shape, frame);
      hits = cache.acquire(cmd, gpu, options).hit() && hits;
    }));
    fresh.push_back(bench::host_us([&] {
      CommandBuffer cmd("frame");
      record(cmd, shape, frame);
      Executable exe = compile(cmd, gpu, options);
    }));
    set_changed.push_back(bench::host_us([&] {
      for (int i = 0; i < length(shape); i += stride) {
        int index = i, value = value_of(i, frame, stride);
        void* args[] = {&index, &value, &ptr};
        const cudaKernelNodeParams p = bench::one_thread_node(&store, args);
        BENCH_CUDA(cudaGraphExecKernelNodeSetParams(r.exec, r.nodes[static_cast<std::size_t>(i)], &p));
      }
    }));
    recapture.push_back(bench::host_us([&] {
      cudaGraph_t again;
      BENCH_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
      enqueue(shape, frame);
      BENCH_CUDA(cudaStreamEndCapture(s, &again));
      cudaGraphExecUpdateResultInfo info;
      BENCH_CUDA(cudaGraphExecUpdate(r.captured, again, &info));
      BENCH_CUDA(cudaGraphDestroy(again));
    }));
  }
  const std::string what = "3 structures of ~" + std::to_string(n) + " kernels, 10% changed";
  const double mine = bench::median(ours);
  bench::row(what + ": cache vs capture + ExecUpdate", bench::median(recapture), mine, "us", "");
  bench::row(what + ": cache vs SetParams of the changed", bench::median(set_changed), mine, "us",
             "");
  bench::row(what + ": cache vs compile every frame", bench::median(fresh), mine, "us", "");
  const CacheStats stats = cache.stats();
  std::printf("%-52s %.3f us per command, record included; %zu hits, %zu misses%s\n",
              "  re-record + cache.acquire", mine / n, stats.hits, stats.misses,
              hits ? "" : "; A FRAME MISSED");
  for (Raw& r : raw) {
    BENCH_CUDA(cudaGraphExecDestroy(r.exec));
    BENCH_CUDA(cudaGraphExecDestroy(r.captured));
    BENCH_CUDA(cudaGraphDestroy(r.graph));
  }
  BENCH_CUDA(cudaStreamDestroy(s));
}

// Threads that run a job together when asked, as an engine's job system does: between jobs
// they spin for up to 5 ms (as Taskflow's workers spin before they sleep), then sleep. Here a
// frame's update (~13 ms) outlasts the spin, so each frame's passes start when the OS has
// woken the workers (printed apart), and the one-thread way records with them asleep. Spinning
// through the whole frame (50 ms, tried) slowed the one-thread way's passes 1.4x on the H100's
// VM and so flattered the ratio.
class Workers {
 public:
  explicit Workers(int count) {
    for (int t = 0; t < count; ++t) {
      threads_.emplace_back([this, t] {
        for (std::uint64_t seen = 0;;) {
          seen = next_job(seen);
          if (stop_.load(std::memory_order_acquire)) return;
          (*job_)(t + 1);
          remaining_.fetch_sub(1, std::memory_order_acq_rel);
        }
      });
    }
  }
  ~Workers() {
    stop_.store(true, std::memory_order_release);
    generation_.fetch_add(1, std::memory_order_acq_rel);
    generation_.notify_all();
    for (std::thread& t : threads_) t.join();
  }
  // Runs job(0) here and job(1..count) on the workers; returns when all are done.
  void run(const std::function<void(int)>& job) {
    job_ = &job;
    remaining_.store(static_cast<int>(threads_.size()), std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_acq_rel);
    generation_.notify_all();
    job(0);
    while (remaining_.load(std::memory_order_acquire) != 0) pause();
  }

 private:
  static void pause() {
#if defined(__x86_64__)
    __builtin_ia32_pause();
#endif
  }
  // The generation of the next job after `seen`: spun for, then slept for.
  std::uint64_t next_job(std::uint64_t seen) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(5);
    for (unsigned i = 1;; ++i) {
      const std::uint64_t now = generation_.load(std::memory_order_acquire);
      if (now != seen) return now;
      if (i % 1024 == 0 && std::chrono::steady_clock::now() > until) break;
      pause();
    }
    for (;;) {
      generation_.wait(seen, std::memory_order_acquire);
      const std::uint64_t now = generation_.load(std::memory_order_acquire);
      if (now != seen) return now;
    }
  }

  std::atomic<std::uint64_t> generation_{0};
  std::atomic<int> remaining_{0};
  std::atomic<bool> stop_{false};
  const std::function<void(int)>* job_ = nullptr;
  std::vector<std::thread> threads_;
};

// A frame of 8 passes, each a secondary of `n` kernels recorded on a thread of its own, executed
// by one primary: recording the secondaries on 8 threads against on one, and the whole frame
// (recording + update of the primary's executable) both ways.
void parallel_recording(int n) {
  const Device gpu = Device::cuda(0);
  constexpr int passes = 8;
  Buffer<int> out(gpu, static_cast<std::size_t>(n) * passes);
  int* ptr = out.data();
  Workers workers(passes - 1);
  // Every `every`-th kernel of a pass takes the frame's values, the others keep theirs.
  int every = 1;
  auto record_pass = [&](CommandBuffer& cmd, int pass, int frame) {
    Command prev;
    for (int i = 0; i < n; ++i) {
      const int value = i % every == 0 ? frame + i : i;
      auto k = cmd.launch(&store, LaunchConfig{{1}, {1}}, pass * n + i, value, ptr);
      if (i) k.after(prev);
      prev = k;
    }
  };
  // Where the 8 threads' time goes, frame by frame: the last worker's start after the run was
  // asked for, the slowest pass's recording, and the join after the last pass ended.
  using Clock = std::chrono::steady_clock;
  auto us = [](Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); };
  std::vector<double> last_start, slowest_pass, join;
  // Records the frame's passes, on 1 or 8 threads, and the primary executing them.
  auto record_frame = [&](std::vector<CommandBuffer>& secondaries, CommandBuffer& primary,
                          int frame, bool parallel) {
    for (int p = 0; p < passes; ++p) secondaries.emplace_back("pass " + std::to_string(p));
    if (parallel) {
      std::array<Clock::time_point, passes> began, ended;
      const Clock::time_point asked = Clock::now();
      workers.run([&](int p) {
        began[p] = Clock::now();
        record_pass(secondaries[p], p, frame);
        ended[p] = Clock::now();
      });
      const Clock::time_point joined = Clock::now();
      Clock::duration slowest{};
      for (int p = 0; p < passes; ++p) slowest = std::max(slowest, ended[p] - began[p]);
      last_start.push_back(us(*std::max_element(began.begin(), began.end()) - asked));
      slowest_pass.push_back(us(slowest));
      join.push_back(us(joined - *std::max_element(ended.begin(), ended.end())));
    } else {
      for (int p = 0; p < passes; ++p) record_pass(secondaries[p], p, frame);
    }
    for (CommandBuffer& secondary : secondaries) primary.execute(secondary);
  };
  std::vector<CommandBuffer> secondaries;
  CommandBuffer first("frame");
  record_frame(secondaries, first, 0, false);
  Executable exe = compile(first, gpu, {.backend = Backend::cuda_graph});

  std::vector<double> record_one, record_eight, frame_one, frame_eight, update_all, woken;
  for (int frame = 1; frame <= 15; ++frame) {
    // What the job system alone costs a frame: its workers started and joined, nothing
    // recorded.
    woken.push_back(bench::host_us([&] { workers.run([](int) {}); }));
    for (bool parallel : {false, true}) {
      // Each way's frames have values of their own, so that every update of either way
      // changes all of them (the same values twice would leave the second way nothing to do).
      const int values = 2 * frame + (parallel ? 1 : 0);
      std::vector<CommandBuffer> passes_of_frame;
      CommandBuffer primary("frame");
      const double recorded = bench::host_us([&] {
        record_frame(passes_of_frame, primary, values, parallel);
      });
      const double updated = bench::host_us([&] { exe.update(primary); });
      (parallel ? record_eight : record_one).push_back(recorded);
      (parallel ? frame_eight : frame_one).push_back(recorded + updated);
      update_all.push_back(updated);
    }
  }
  // The update alone of a frame whose passes changed 1% of their kernels.
  every = 100;
  std::vector<double> update_one_percent;
  for (int frame = 16; frame <= 30; ++frame) {
    std::vector<CommandBuffer> passes_of_frame;
    CommandBuffer primary("frame");
    record_frame(passes_of_frame, primary, 2 * frame, false);
    update_one_percent.push_back(bench::host_us([&] { exe.update(primary); }));
  }
  const std::string what = "8 passes of " + std::to_string(n) + " kernels";
  bench::row(what + ": record on 8 threads vs on 1", bench::median(record_one),
             bench::median(record_eight), "us", "<= 0.167x");
  bench::row(what + ": record + update, 8 threads vs 1", bench::median(frame_one),
             bench::median(frame_eight), "us", "");
  std::printf("  the update alone: %.1f us with every kernel changed, %.1f us with 1%% of them "
              "(%d)\n", bench::median(update_all),
              bench::median(update_one_percent), passes * n / every);
  std::printf("  the 7 workers started and joined, nothing recorded: %.1f us a frame\n",
              bench::median(woken));
  std::printf("  on 8 threads: the last pass starts %.1f us after the run is asked for, the "
              "slowest records for %.1f us (one thread: %.1f a pass), the join takes %.1f us\n",
              bench::median(last_start), bench::median(slowest_pass),
              bench::median(record_one) / passes, bench::median(join));
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
  bench::header("three structures in turn through an ExecutableCache, recording included");
  cycling(1000);
  bench::header("a frame of 8 secondaries recorded on 8 threads (first column: on one thread)");
  parallel_recording(1000);
  return 0;
}
