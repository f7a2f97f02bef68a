// cmdgraph's streams backend against hand-written multi-stream code for the same DAGs, in the
// same process: time per launch and event waits.
#include "bench_support.cuh"

#include <cmdgraph/cmdgraph.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <set>
#include <string>
#include <vector>

using namespace cmdgraph;

namespace {

// Busy for about `cycles` SM cycles: a kernel that takes real time, so overlap matters.
__global__ void busy_kernel(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

constexpr int default_lanes = 4;

// A random DAG: vertex v after 1-3 parents among all earlier vertices (fixed seed).
std::vector<std::vector<int>> random_parents(int n) {
  std::mt19937 rng(7);
  std::vector<std::vector<int>> parents(n);
  for (int v = 1; v < n; ++v) {
    std::set<int> ps;
    for (int k = 1 + static_cast<int>(rng() % 3); k > 0; --k) ps.insert(static_cast<int>(rng() % v));
    parents[v].assign(ps.begin(), ps.end());
  }
  return parents;
}

// Hand-written: `chains` chains, chain c on stream c % lanes (stream 0 is the caller's),
// fork and join events.
struct HandChains {
  int lanes;
  cudaStream_t main;
  std::vector<cudaStream_t> s;
  cudaEvent_t fork;
  std::vector<cudaEvent_t> join;
  int waits = 0;
  explicit HandChains(cudaStream_t m, int lane_count = default_lanes)
      : lanes(lane_count), main(m), s(lanes), join(lanes) {
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
  // A random DAG as a careful hand plans it: each vertex on its first parent's stream when
  // that parent is the stream's last, else the next stream in turn; a wait on a parent's
  // event unless the stream already waited on that stream at or after it. Planned once.
  struct Plan {
    std::vector<int> stream;
    std::vector<std::vector<int>> waits;
    std::vector<char> records;
    std::vector<cudaEvent_t> events;
  };
  Plan plan(const std::vector<std::vector<int>>& parents) {
    const int n = static_cast<int>(parents.size());
    Plan p{std::vector<int>(n), std::vector<std::vector<int>>(n), std::vector<char>(n, 0), {}};
    std::vector<int> tail(lanes, -1), next(lanes, 0), position(n);
    std::vector<std::vector<int>> waited(lanes, std::vector<int>(lanes, -1));
    int turn = 0;
    for (int v = 0; v < n; ++v) {
      const auto& ps = parents[v];
      const bool continues = !ps.empty() && tail[p.stream[ps[0]]] == ps[0];
      const int st = continues ? p.stream[ps[0]] : turn++ % lanes;
      for (int q : ps) {
        if (p.stream[q] == st || waited[st][p.stream[q]] >= position[q]) continue;
        p.waits[v].push_back(q);
        p.records[q] = 1;
        waited[st][p.stream[q]] = position[q];
      }
      p.stream[v] = st;
      tail[st] = v;
      position[v] = next[st]++;
    }
    p.events.resize(n);
    for (auto& e : p.events) BENCH_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    return p;
  }
  void dag(const Plan& p, long long cycles) {
    waits = 0;
    BENCH_CUDA(cudaEventRecord(fork, main));
    for (int i = 1; i < lanes; ++i, ++waits) BENCH_CUDA(cudaStreamWaitEvent(s[i], fork, 0));
    for (std::size_t v = 0; v < p.stream.size(); ++v) {
      cudaStream_t st = s[p.stream[v]];
      for (int q : p.waits[v]) {
        BENCH_CUDA(cudaStreamWaitEvent(st, p.events[q], 0));
        ++waits;
      }
      busy_kernel<<<1, 1, 0, st>>>(cycles);
      if (p.records[v]) BENCH_CUDA(cudaEventRecord(p.events[v], st));
    }
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

CommandBuffer dag_buffer(const std::vector<std::vector<int>>& parents, long long cycles) {
  CommandBuffer cmd("random dag");
  std::vector<Command> c;
  for (const auto& ps : parents) {
    c.push_back(cmd.launch(&busy_kernel, LaunchConfig{{1}, {1}}, cycles));
    for (int q : ps) c.back().after(c[static_cast<std::size_t>(q)]);
  }
  return cmd;
}

CommandBuffer layers_buffer(int count, long long cycles) {
  CommandBuffer cmd("layers");
  for (int l = 0; l < count; ++l) {
    for (int i = 0; i < default_lanes; ++i) cmd.launch(&busy_kernel, LaunchConfig{{1}, {1}}, cycles);
    if (l + 1 < count) cmd.barrier();
  }
  return cmd;
}

void compare(const char* what, const std::function<void(HandChains&)>& hand, CommandBuffer& cmd,
             int lanes = default_lanes) {
  const Device gpu = Device::cuda(0);
  Queue q(gpu);
  HandChains h(q.native_handle(), lanes);
  Executable exe = compile(cmd, gpu, {.backend = Backend::streams,
                                      .max_streams = static_cast<unsigned>(lanes)});
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
             "us", "<= 1.0x");
  // The host drifts by more than a few percent over a row: the ratio within each trial, whose
  // two halves ran back to back, cancels it.
  std::vector<double> ratios;
  for (std::size_t t = 0; t < raw.size(); ++t) ratios.push_back(ours[t] / raw[t]);
  std::sort(ratios.begin(), ratios.end());
  std::printf("%-52s %12s %12s       %7.3fx  (quartiles %.3fx - %.3fx)\n",
              "  median of the trials' own ratios", "", "", bench::median(ratios),
              ratios[ratios.size() / 4], ratios[3 * ratios.size() / 4]);
  std::printf("%-52s %12d %12zu        (streams: %zu, events: %zu)\n", "  event waits per launch",
              h.waits, exe.stats().event_waits, exe.stats().streams, exe.stats().events);
}

}  // namespace

int main(int argc, char** argv) {
  if (bench::no_gpu("bench_streams")) return 0;
  // `bench_streams TEXT [N]`: only the rows whose name holds TEXT, each N times.
  const std::string only = argc > 1 ? argv[1] : "";
  const int repeat = argc > 2 ? std::max(1, std::atoi(argv[2])) : 1;
  auto compare_if = [&](const std::string& what, const std::function<void(HandChains&)>& hand,
                        CommandBuffer cmd, int lanes = default_lanes) {
    if (what.find(only) == std::string::npos) return;
    for (int r = 0; r < repeat; ++r) compare(what.c_str(), hand, cmd, lanes);
  };
  std::printf("bench_streams on %s; 4 streams unless said; medians of repeated trials\n",
              Device::cuda(0).properties().name.c_str());
  bench::header("streams backend vs hand-written streams and events");
  compare_if("8 x 125 empty-ish chains (host-bound)", [](HandChains& h) { h.run(8, 125, 0); },
          chains_buffer(8, 125, 0));
  compare_if("8 x 25 chains of ~10 us kernels", [](HandChains& h) { h.run(8, 25, 20000); },
          chains_buffer(8, 25, 20000));
  compare_if("50 layers of 4 ~10 us kernels, barriers between", [](HandChains& h) { h.layers(50, 20000); },
          layers_buffer(50, 20000));
  // One stream: no waits at all, so the difference is what each task costs the host.
  for (const int lanes : {1, 4, 8}) {
    for (const int n : {200, 1000, 4000}) {
      for (const long long cycles : {0LL, 4000LL}) {
        if (lanes == 1 && (n == 200 || cycles)) continue;
        const auto parents = random_parents(n);
        const Device gpu = Device::cuda(0);
        Queue q(gpu);
        HandChains planner(q.native_handle(), lanes);
        const auto plan = std::make_shared<HandChains::Plan>(planner.plan(parents));
        const std::string what = "random " + std::to_string(n) + (cycles ? ", ~2 us" : ", empty") +
                                 ", " + std::to_string(lanes) + " streams";
        compare_if(what, [plan, cycles](HandChains& h) { h.dag(*plan, cycles); },
                dag_buffer(parents, cycles), lanes);
      }
    }
  }
  return 0;
}
