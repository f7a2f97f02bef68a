// An all-reduce step: ncclAllReduce called on a stream every step (raw) against the same
// all-reduce recorded once as a cmdgraph command, compiled to a CUDA graph and replayed (the
// collective is a child graph captured from the NCCL call). Sizes 4 KiB to 256 MiB of floats,
// powers of 4. One rank per visible GPU, one host thread per rank (both sides), the ranks in
// lockstep between phases; each trial runs both sides, alternating which goes first; medians of
// the time per step (host wall clock over back-to-back steps, then one synchronize), their
// ratio, and bus bandwidth (NCCL's definition: algorithm bandwidth x 2 (ranks - 1) / ranks;
// with one rank the step is a copy within the GPU and only algorithm bandwidth means anything).
// [--trials N] [--max-bytes N]
#include "bench_support.cuh"

#include <cmdgraph/cmdgraph.hpp>

#include <nccl.h>

#include <barrier>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

using namespace cmdgraph;

namespace {

#define BENCH_NCCL(call)                                                                    \
  do {                                                                                      \
    const ncclResult_t status_ = (call);                                                    \
    if (status_ != ncclSuccess) {                                                           \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,                    \
                   ncclGetErrorString(status_));                                            \
      std::exit(1);                                                                         \
    }                                                                                       \
  } while (0)

std::size_t flag(int argc, char** argv, const char* name, std::size_t fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], name) == 0) return std::stoull(argv[i + 1]);
  }
  return fallback;
}

// Steps per trial: enough to amortise the synchronize on small sizes, few on large ones.
int steps_for(std::size_t bytes) {
  const std::size_t s = (std::size_t{64} << 20) / bytes;
  return static_cast<int>(std::clamp<std::size_t>(s, 5, 200));
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

struct Times {
  std::vector<double> raw_us, ours_us;  // per step, one per trial
};

// One rank: both sides, `trials` times, in lockstep with the other ranks through `sync`.
Times run_rank(const Communicator& comm, std::size_t bytes, int trials, std::barrier<>& sync) {
  const Device gpu = comm.device();
  const std::size_t count = bytes / sizeof(float);
  Buffer<float> send(gpu, count), recv(gpu, count);
  CommandBuffer cmd("all_reduce step");
  cmd.all_reduce(comm, send, recv, count).named("all_reduce");
  Executable exe = compile(cmd, gpu, {.backend = Backend::cuda_graph});
  Queue queue(gpu);
  cudaStream_t stream = queue.native_handle();
  const int steps = steps_for(bytes);

  auto raw = [&] {
    BENCH_CUDA(cudaSetDevice(gpu.ordinal()));
    sync.arrive_and_wait();
    const auto start = std::chrono::steady_clock::now();
    for (int s = 0; s < steps; ++s) {
      BENCH_NCCL(ncclAllReduce(send.data(), recv.data(), count, ncclFloat, ncclSum,
                               comm.native_handle(), stream));
    }
    BENCH_CUDA(cudaStreamSynchronize(stream));
    return seconds_since(start) * 1e6 / steps;
  };
  auto ours = [&] {
    sync.arrive_and_wait();
    const auto start = std::chrono::steady_clock::now();
    for (int s = 0; s < steps; ++s) exe.launch(queue);
    queue.wait();
    return seconds_since(start) * 1e6 / steps;
  };
  raw();  // warm both: first-use costs
  ours();
  Times t;
  for (int trial = 0; trial < trials; ++trial) {
    if (trial % 2 == 0) {
      t.raw_us.push_back(raw());
      t.ours_us.push_back(ours());
    } else {
      t.ours_us.push_back(ours());
      t.raw_us.push_back(raw());
    }
  }
  return t;
}

std::string size_name(std::size_t bytes) {
  if (bytes >= (std::size_t{1} << 20)) return std::to_string(bytes >> 20) + " MiB";
  return std::to_string(bytes >> 10) + " KiB";
}

}  // namespace

int main(int argc, char** argv) {
  if (bench::no_gpu("bench_nccl")) return 0;
  const int trials = static_cast<int>(flag(argc, argv, "--trials", 11));
  const std::size_t max_bytes = flag(argc, argv, "--max-bytes", std::size_t{256} << 20);
  const int ranks = Device::count();
  std::vector<Device> gpus;
  for (int d = 0; d < ranks; ++d) gpus.push_back(Device::cuda(d));
  int version = 0;
  BENCH_NCCL(ncclGetVersion(&version));
  std::vector<Communicator> comms = Communicator::all(gpus);
  std::printf("bench_nccl: %d rank(s) (%s), NCCL %d, %d trials, medians per step\n", ranks,
              gpus[0].properties().name.c_str(), version, trials);
  std::printf("\n%-9s %6s %14s %14s %8s %12s %12s\n", "size", "steps", "raw us/step",
              "cmdgraph us", "ratio", "algbw GB/s", "busbw GB/s");
  for (std::size_t bytes = 4096; bytes <= max_bytes; bytes *= 4) {
    std::vector<Times> times(ranks);
    std::barrier<> sync(ranks);
    std::vector<std::thread> threads;
    for (int r = 0; r < ranks; ++r) {
      threads.emplace_back([&, r] { times[r] = run_rank(comms[r], bytes, trials, sync); });
    }
    for (auto& t : threads) t.join();
    // The slowest rank sets the pace of a collective: rank 0 is as good a witness as any.
    const double raw = bench::median(times[0].raw_us), ours = bench::median(times[0].ours_us);
    const double algbw = double(bytes) / (ours * 1e-6) / 1e9;
    const double busbw = algbw * 2.0 * (ranks - 1) / ranks;
    std::printf("%-9s %6d %14.2f %14.2f %7.3fx %12.1f %12.1f\n", size_name(bytes).c_str(),
                steps_for(bytes), raw, ours, ours / raw, algbw, busbw);
  }
  return 0;
}
