// bench_frames_host: what a frame costs the host before any device work, on the host backend
// (issue 33): a chain of N parallel_for commands (a small kernel's worth of arguments each)
// re-recorded every frame, 0%, 1%, 10% or 100% of them with new values, then update(); and
// three structures in turn (chains of N, N + 8, N + 16) through an ExecutableCache, 10% new.
// Prints medians of alternating frames: recording, and update() or acquire() after it, each
// per frame and per command. Run under `valgrind --tool=callgrind` for instruction counts.
// Usage: bench_frames_host [commands...] [--frames F]   (default: 1000 10000, 15 frames)
#include "host_bench.hpp"

#include <cmdgraph/cmdgraph.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using namespace cmdgraph;
using host_bench::Clock;
using host_bench::median;
using host_bench::Scale;
using host_bench::elapsed_us;

// Frame `frame` of a chain of `n`: every `stride`-th command's factor changes each frame
// (stride 0: none does).
__attribute__((noinline)) void record(CommandBuffer& cmd, float* data, std::size_t n, int frame,
                                      std::size_t stride) {
  Command previous;
  for (std::size_t c = 0; c < n; ++c) {
    const bool changes = stride != 0 && c % stride == 0;
    const float factor = changes ? static_cast<float>(frame) : 1.0f;
    Command next = cmd.parallel_for(1, Scale{data, factor});
    if (c) next.after(previous);
    previous = next;
  }
}

__attribute__((noinline)) UpdateResult update(Executable& exe, CommandBuffer& cmd) {
  return exe.update(cmd);
}

__attribute__((noinline)) bool acquire(ExecutableCache& cache, CommandBuffer& cmd) {
  return cache.acquire(cmd, Device::host()).hit();
}

void print(const std::string& what, std::size_t n, double record_us, double then_us) {
  std::printf("%-34s %10.1f %8.3f %10.1f %8.3f\n", what.c_str(), record_us, record_us / n,
              then_us, then_us / n);
}

void frames(std::size_t n, int percent, int count, std::vector<float>& data) {
  const std::size_t stride = percent == 0 ? 0 : 100 / percent;
  CommandBuffer first("frame");
  record(first, data.data(), n, 0, stride);
  Executable exe = compile(first, Device::host());
  std::vector<double> recording, updating;
  for (int frame = 1; frame <= count; ++frame) {
    CommandBuffer cmd("frame");
    const auto start = Clock::now();
    record(cmd, data.data(), n, frame, stride);
    recording.push_back(elapsed_us(start));
    const auto then = Clock::now();
    const UpdateResult r = update(exe, cmd);
    updating.push_back(elapsed_us(then));
    const std::size_t expected = stride == 0 ? 0 : (n + stride - 1) / stride;
    if (r.commands_changed != expected || r.reinstantiated) {
      std::fprintf(stderr, "%zu commands changed, expected %zu\n", r.commands_changed, expected);
      std::exit(1);
    }
  }
  print(std::to_string(n) + ", " + std::to_string(percent) + "% new: update", n,
        median(recording), median(updating));
}

void cycling(std::size_t n, int count, std::vector<float>& data) {
  ExecutableCache cache;
  std::vector<double> recording, acquiring;
  for (int frame = 0; frame < count + 3; ++frame) {
    CommandBuffer cmd("frame");
    const auto start = Clock::now();
    record(cmd, data.data(), n + 8 * static_cast<std::size_t>(frame % 3), frame, 10);
    const double recorded = elapsed_us(start);
    const auto then = Clock::now();
    const bool hit = acquire(cache, cmd);
    if (frame < 3) continue;  // the first of each structure compiles
    if (!hit) {
      std::fprintf(stderr, "frame %d missed the cache\n", frame);
      std::exit(1);
    }
    acquiring.push_back(elapsed_us(then));
    recording.push_back(recorded);
  }
  print(std::to_string(n) + ", 3 structures: cache hit", n, median(recording),
        median(acquiring));
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::size_t> sizes;
  int count = 15;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--frames") == 0 && i + 1 < argc) {
      count = std::atoi(argv[++i]);
    } else {
      sizes.push_back(std::strtoull(argv[i], nullptr, 10));
    }
  }
  if (sizes.empty()) sizes = {1000, 10000};
  std::printf("host backend, medians of %d frames\n", count);
  std::printf("%-34s %10s %8s %10s %8s\n", "frame", "record us", "/cmd", "then us", "/cmd");
  for (const std::size_t n : sizes) {
    std::vector<float> data(1, 1.0f);
    for (const int percent : {0, 1, 10, 100}) frames(n, percent, count, data);
    cycling(n, count, data);
  }
  return 0;
}
