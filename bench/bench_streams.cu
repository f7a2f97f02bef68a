// cmdgraph's streams backend against hand-written multi-stream code for the same DAGs, in the
// same process: time per launch and event waits.
#include "bench_support.cuh"

#include <cmdgraph/cmdgraph.hpp>

#include <cstdio>
#include <vector>

using namespace cmdgraph;

namespace {

// Busy for about `cycles` SM cycles: a kernel that takes real time, so overlap matters.
__global__ void busy_kernel(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

constexpr int lanes = 4;

// Hand-written: `chains` chains, chain c on stream c % lanes (stream 0 is the caller's),
// fork and join events.
struct HandChains {
  cudaStream_t main;
  std::vector<cudaStream_t> s;
  cudaEvent_t fork;
  std::vector<cudaEvent_t> join;
  int waits = 0;
  explicit HandChains(cudaStream_t m) : main(m), s(lanes), join(lanes) {
    s[0] = main;
    for (int i = 1; i < lanes; ++i) BENCH_CUDA(cudaStreamCreateWithFlags(&s[i], cudaStreamNonBlocking));
    BENCH_CUDA(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
    for (auto& e : join) BENCH_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  }
  void run(int chains, int length, long long cycles) {
    waits = 0;
    BENCH_CUDA(cudaEventRecord(fork, main));
    for (int i = 1; i < lanes; ++i, ++waits) BENCH_CUDA(cudaStreamWaitEvent(s[i], fork, 0));
    for (int c = 0; c < chains; ++c)
      for (int k = 0; k < length; ++k) busy_kernel<<<1, 1, 0, s[c % lanes]>>>(cycles);
    for (int i = 1; i < lanes; ++i, ++waits) {
      BENCH_CUDA(cudaEventRecord(join[i], s[i]));
      BENCH_CUDA(cudaStreamWaitEvent(main, join[i], 0));
    }
  }
  // `layers` layers of `lanes` kernels, every layer after the whole previous one.
  void layers(int count, long long cycles) {
    waits = 0;
    BENCH_CUDA(cudaEventRecord(fork, main));
    for (int i = 1; i < lanes; ++i, ++waits) BENCH_CUDA(cudaStreamWaitEvent(s[i], fork, 0));
    for (int l = 0; l < count; ++l) {
      for (int i = 0; i < lanes; ++i) busy_kernel<<<1, 1, 0, s[i]>>>(cycles);
      if (l + 1 == count) break;
      for (int i = 1; i < lanes; ++i, ++waits) {  // all into stream 0 ...
        BENCH_CUDA(cudaEventRecord(join[i], s[i]));
        BENCH_CUDA(cudaStreamWaitEvent(main, join[i], 0));
      }
      BENCH_CUDA(cudaEventRecord(fork, main));  // ... and out again
      for (int i = 1; i < lanes; ++i, ++waits) BENCH_CUDA(cudaStreamWaitEvent(s[i], fork, 0));
    }
    for (int i = 1; i < lanes; ++i, ++waits) {
      BENCH_CUDA(cudaEventRecord(join[i], s[i]));
      BENCH_CUDA(cudaStreamWaitEvent(main, join[i], 0));
    }
  }
};

CommandBuffer chains_buffer(int chains, int length, long long cycles) {
  CommandBuffer cmd("chains");
  for (int c = 0; c < chains; ++c) {
    Command prev;
    for (int k = 0; k < length; ++k) {
      auto x = cmd.launch(&busy_kernel, LaunchConfig{{1}, {1}}, cycles);
      if (k) x.after(prev);
      prev = x;
    }
  }
  return cmd;
}

CommandBuffer layers_buffer(int count, long long cycles) {
  CommandBuffer cmd("layers");
  for (int l = 0; l < count; ++l) {
    for (int i = 0; i < lanes; ++i) cmd.launch(&busy_kernel, LaunchConfig{{1}, {1}}, cycles);
    if (l + 1 < count) cmd.barrier();
  }
  return cmd;
}

void compare(const char* what, const std::function<void(HandChains&)>& hand, CommandBuffer cmd) {
  const Device gpu = Device::cuda(0);
  Queue q(gpu);
  HandChains h(q.native_handle());
  Executable exe = compile(cmd, gpu, {.backend = Backend::streams, .max_streams = lanes});
  constexpr int launches = 20;
  auto time_raw = [&] {
    return bench::device_us(q.native_handle(), [&] {
      for (int i = 0; i < launches; ++i) hand(h);
    }) / launches;
  };
  auto time_ours = [&] {
    const double us = bench::device_us(q.native_handle(), [&] {
      for (int i = 0; i < launches; ++i) exe.launch(q);
    }) / launches;
    q.wait();
    return us;
  };
  std::vector<double> raw, ours;
  for (int t = 0; t < 33; ++t) {
    // Whichever runs second in a trial may find the host warmer or busier: take turns.
    double r, o;
    if (t % 2) {
      o = time_ours();
      r = time_raw();
    } else {
      r = time_raw();
      o = time_ours();
    }
    if (t == 0) continue;  // warm-up
    raw.push_back(r);
    ours.push_back(o);
  }
  bench::row(std::string(what) + ": time per launch", bench::median(raw), bench::median(ours),
             "us", "<= 1.05x");
  std::printf("%-52s %12d %12zu        (streams: %zu, events: %zu)\n", "  event waits per launch",
              h.waits, exe.stats().event_waits, exe.stats().streams, exe.stats().events);
}

}  // namespace

int main() {
  if (bench::no_gpu("bench_streams")) return 0;
  std::printf("bench_streams on %s; 4 streams; medians of repeated trials\n",
              Device::cuda(0).properties().name.c_str());
  bench::header("streams backend vs hand-written streams and events");
  compare("8 x 125 empty-ish chains (host-bound)", [](HandChains& h) { h.run(8, 125, 0); },
          chains_buffer(8, 125, 0));
  compare("8 x 25 chains of ~10 us kernels", [](HandChains& h) { h.run(8, 25, 20000); },
          chains_buffer(8, 25, 20000));
  compare("50 layers of 4 ~10 us kernels, barriers between", [](HandChains& h) { h.layers(50, 20000); },
          layers_buffer(50, 20000));
  return 0;
}
