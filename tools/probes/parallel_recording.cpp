// parallel_recording: does recording scale over threads as the machine does? Each of K threads
// (K = 1, 2, 4, 8) does the same job at once, and the slowest's time (and the wall time of all)
// is printed against one thread doing it alone: arithmetic (the cores themselves: frequency,
// shared cores), writing fresh memory (the memory system), and recording 1,000 kernels with an
// edge each into a buffer of its own (cmdgraph). Medians of 21 rounds; threads are started
// once and released together by a barrier.
// Build: g++ -std=c++20 -O2 -Iinclude -I<build>/include tools/probes/parallel_recording.cpp
//        -L<build>/lib -lcmdgraph -Wl,-rpath,<build>/lib -pthread
#include <cmdgraph/cmdgraph.hpp>

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "probe.hpp"

namespace {

using namespace cmdgraph;
using Clock = std::chrono::steady_clock;

void stub(int, int, int*) {}

double us_since(Clock::time_point start) {
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

double arithmetic() {
  const auto start = Clock::now();
  volatile unsigned long x = 1;
  for (int i = 0; i < 200000; ++i) x = x * 6364136223846793005ULL + 1;
  return us_since(start);
}

double fresh_memory() {
  const auto start = Clock::now();
  for (int i = 0; i < 8; ++i) {
    std::vector<char> block(200 * 1024);
    std::memset(block.data(), i, block.size());
    asm volatile("" : : "r"(block.data()) : "memory");
  }
  return us_since(start);
}

double recording(int round) {
  static int target;
  const auto start = Clock::now();
  CommandBuffer cmd("pass");
  Command previous;
  for (int i = 0; i < 1000; ++i) {
    auto k = cmd.launch(&stub, LaunchConfig{{1}, {1}}, i, round + i, &target);
    if (i) k.after(previous);
    previous = k;
  }
  return us_since(start);
}

struct Together {
  double slowest;  // the slowest thread's own time, median over rounds
  double wall;     // from the first thread's start to the last one's end, median over rounds
};

// `threads` threads running job(round) at once.
Together together(int threads, const std::function<double(int)>& job) {
  const auto n = static_cast<std::size_t>(threads);
  std::vector<double> own(n);
  std::vector<Clock::time_point> began(n), ended(n);
  std::barrier<> start(threads);
  std::vector<double> slowest, wall;
  auto body = [&](std::size_t t) {
    for (int r = 0; r < 21; ++r) {
      start.arrive_and_wait();
      began[t] = Clock::now();
      own[t] = job(r);
      ended[t] = Clock::now();
      start.arrive_and_wait();
      if (t != 0) continue;
      slowest.push_back(*std::max_element(own.begin(), own.end()));
      wall.push_back(std::chrono::duration<double, std::micro>(
                         *std::max_element(ended.begin(), ended.end()) -
                         *std::min_element(began.begin(), began.end()))
                         .count());
    }
  };
  std::vector<std::thread> workers;
  for (std::size_t t = 1; t < n; ++t) workers.emplace_back(body, t);
  body(0);
  for (std::thread& w : workers) w.join();
  return {probe::median(slowest), probe::median(wall)};
}

}  // namespace

int main() {
  std::printf("%u hardware threads\n", std::thread::hardware_concurrency());
  const std::pair<const char*, std::function<double(int)>> jobs[] = {
      {"arithmetic", [](int) { return arithmetic(); }},
      {"fresh memory", [](int) { return fresh_memory(); }},
      {"recording 1,000 kernels", [](int r) { return recording(r); }},
  };
  std::printf("each job alone, then k at once: the slowest thread's own time / the wall time, "
              "both against alone\n");
  for (const auto& [name, job] : jobs) {
    const double alone = together(1, job).slowest;
    std::printf("%-24s alone %7.1f us;", name, alone);
    for (int k : {2, 4, 8}) {
      const Together t = together(k, job);
      std::printf("  %d: %.2fx / %.2fx", k, t.slowest / alone, t.wall / alone);
    }
    std::printf("\n");
  }
  return 0;
}
