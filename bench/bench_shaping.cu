// Graph shaping (CompileOptions::shape) against the raw graph a hand builds of the same DAG, in
// the same process: device time per replay and host time of one launch, for each shaping;
// "automatic" is the default with every kernel's cost given (its spin time), "uniform" counts
// each kernel as one unit. The default without costs ("learned") is the plan's graph, as
// "off", until it learned its shape from its own launches; it is measured once learning ended,
// and what its launches cost on the way is printed.
#include "bench_support.cuh"

#include <cmdgraph/cmdgraph.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

using namespace cmdgraph;

namespace {

constexpr int trials = 15;
constexpr int replays = 5;  // per trial, back to back

// Busy for about `cycles` SM cycles (0: an empty kernel).
__global__ void busy_kernel(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

using bench::Parents;
using bench::random_dag;

Parents chains(int count, int length) {
  Parents p(count * length);
  for (int c = 0; c < count; ++c)
    for (int k = 1; k < length; ++k) p[c * length + k] = {c * length + k - 1};
  return p;
}

// 1 -> `width` -> 1, `rounds` times over.
Parents fork_join(int width, int rounds) {
  Parents p;
  int join = -1;
  for (int r = 0; r < rounds; ++r) {
    const int fork = static_cast<int>(p.size());
    p.push_back(join < 0 ? std::vector<int>{} : std::vector<int>{join});
    for (int i = 0; i < width; ++i) p.push_back({fork});
    std::vector<int> all(width);
    for (int i = 0; i < width; ++i) all[i] = fork + 1 + i;
    join = static_cast<int>(p.size());
    p.push_back(all);
  }
  return p;
}

// How long each vertex's kernel spins, in SM cycles.
using Cycles = std::vector<long long>;

// About 1.98 cycles a nanosecond: the H200's SM clock under load.
std::chrono::nanoseconds cost_of(long long cycles) {
  return std::chrono::nanoseconds(static_cast<long long>(static_cast<double>(cycles) / 1.98));
}

// The graph a hand builds: one kernel node per vertex, an edge per parent.
cudaGraphExec_t raw_exec(const Parents& parents, const Cycles& cycles, cudaStream_t s) {
  cudaGraph_t g;
  BENCH_CUDA(cudaGraphCreate(&g, 0));
  std::vector<cudaGraphNode_t> nodes(parents.size());
  std::vector<cudaGraphNode_t> deps;
  for (std::size_t v = 0; v < parents.size(); ++v) {
    long long spin = cycles[v];
    void* args[] = {&spin};  // copied by cudaGraphAddKernelNode
    cudaKernelNodeParams p = bench::one_thread_node(&busy_kernel, args);
    deps.clear();
    for (int q : parents[v]) deps.push_back(nodes[q]);
    BENCH_CUDA(cudaGraphAddKernelNode(&nodes[v], g, deps.data(), deps.size(), &p));
  }
  cudaGraphExec_t exec;
  BENCH_CUDA(cudaGraphInstantiate(&exec, g, 0));
  BENCH_CUDA(cudaGraphUpload(exec, s));
  BENCH_CUDA(cudaGraphDestroy(g));
  return exec;
}

// `costs`: each kernel's cost() is its spin time (0 for an empty kernel).
Executable ours(const Parents& parents, const Cycles& cycles, GraphShape shape, bool costs) {
  CommandBuffer cmd("dag");
  std::vector<Command> c;
  c.reserve(parents.size());
  for (std::size_t v = 0; v < parents.size(); ++v) {
    c.push_back(cmd.launch(&busy_kernel, LaunchConfig{{1}, {1}}, cycles[v]));
    if (costs) c.back().cost(cost_of(cycles[v]));
    for (int q : parents[v]) c.back().after(c[q]);
  }
  return compile(cmd, Device::cuda(0), {.backend = Backend::cuda_graph, .shape = shape});
}

struct Variant {
  const char* name;
  GraphShape shape;
  bool costs;
};

// What learning the shape (the default without costs) cost: each launch timed alone (device
// time between events around it, and the host time of the call) until shape_reason no longer
// says it is learning, each after a launch of the raw graph timed alone the same way, the
// yardstick. The first launch is apart: it uploads and loads kernels lazily whether or not
// anything is learned.
struct Learning {
  int ended_at = -1;  // -1: still learning after the cap
  std::vector<double> took, host, raw;

  double raw_us() const { return bench::median(raw); }
  double median_us() const { return bench::median({took.begin() + 1, took.end()}); }
  // Launches after the first, slowest first.
  std::vector<std::size_t> slowest() const {
    std::vector<std::size_t> order(took.size() - 1);
    for (std::size_t k = 0; k < order.size(); ++k) order[k] = k + 1;
    std::sort(order.begin(), order.end(), [&](auto x, auto y) { return took[x] > took[y]; });
    return order;
  }
  std::size_t above(double limit_us) const {
    return std::count_if(took.begin() + 1, took.end(), [&](double t) { return t > limit_us; });
  }
};

Learning settle(Executable& exe, cudaGraphExec_t raw, cudaStream_t s, Queue& queue) {
  Learning out;
  for (int k = 0; k < 5000 && (out.ended_at < 0 || k < 2); ++k) {  // and one after the first
    out.raw.push_back(bench::device_us(s, [&] { BENCH_CUDA(cudaGraphLaunch(raw, s)); }));
    queue.wait();
    double host = 0;
    out.took.push_back(
        bench::device_us(s, [&] { host = bench::host_us([&] { exe.launch(queue); }); }));
    out.host.push_back(host);
    queue.wait();
    const bool learning = exe.stats().shape_reason.find("learning the shape") != std::string::npos;
    if (!learning && out.ended_at < 0) out.ended_at = k;
  }
  return out;
}

void print(const Learning& learning, const ExecutableStats& st) {
  const double raw = learning.raw_us();
  std::printf("  learned: learning ended at launch %d of its own (%zu timed, the learned graph "
              "from launch %llu); each launch alone: raw %.1f us; ours first %.1f us, then "
              "median %.1f us (%.3fx raw), %zu of %zu above 1.02x raw; slowest:",
              learning.ended_at, st.shape_timed_launches,
              static_cast<unsigned long long>(st.shape_learned_at_launch), raw,
              learning.took.front(), learning.median_us(), learning.median_us() / raw,
              learning.above(1.02 * raw), learning.took.size() - 1);
  const std::vector<std::size_t> slowest = learning.slowest();
  for (std::size_t i = 0; i < std::min<std::size_t>(5, slowest.size()); ++i) {
    const std::size_t k = slowest[i];
    std::printf(" #%zu %.1f us (%.2fx, host %.1f us)", k, learning.took[k],
                learning.took[k] / raw, learning.host[k]);
  }
  std::printf("\n  learned: %s\n", st.shape_reason.c_str());
}

void measure(const char* what, const Parents& parents, const Cycles& cycles, Queue& queue) {
  cudaStream_t s = queue.native_handle();
  const Variant variants[] = {{"off", GraphShape::off(), false},
                              {"uniform", GraphShape::uniform(), false},
                              {"automatic", GraphShape::automatic(), true},
                              {"learned", GraphShape::automatic(), false},
                              {"lanes(8)", GraphShape::lanes(8), false},
                              {"lanes(32)", GraphShape::lanes(32), false}};
  constexpr int count = sizeof(variants) / sizeof(variants[0]);
  {
    // The default without costs must be the plan's graph.
    Executable bare = ours(parents, cycles, GraphShape::automatic(), false);
    if (bare.stats().shape_lanes != 0) {
      std::printf("FAIL: %s: automatic without costs shaped the graph (%s)\n", what,
                  bare.stats().shape_reason.c_str());
    }
  }
  cudaGraphExec_t raw = raw_exec(parents, cycles, s);
  std::vector<Executable> exes;
  for (const Variant& v : variants) exes.push_back(ours(parents, cycles, v.shape, v.costs));
  const Learning learning = settle(exes[3], raw, s, queue);
  std::vector<double> replay[count + 1], host[count + 1];
  for (int trial = 0; trial <= trials; ++trial) {  // the first is a warm-up
    for (int i = 0; i <= count; ++i) {
      auto launch = [&] {
        if (i == 0) {
          BENCH_CUDA(cudaGraphLaunch(raw, s));
        } else {
          exes[i - 1].launch(queue);
        }
      };
      const double device = bench::device_us(s, [&] {
        for (int r = 0; r < replays; ++r) launch();
      }) / replays;
      queue.wait();
      const double host_us = bench::host_us(launch);
      queue.wait();
      if (trial > 0) {
        replay[i].push_back(device);
        host[i].push_back(host_us);
      }
    }
  }
  const double raw_replay = bench::median(replay[0]), raw_host = bench::median(host[0]);
  std::printf("\n== %s: raw graph replay %.1f us, launch host %.2f us\n", what, raw_replay,
              raw_host);
  for (int i = 0; i < count; ++i) {
    const ExecutableStats& st = exes[i].stats();
    std::printf("  %-10s replay %9.1f us %6.3fx   launch host %8.2f us %7.3fx   lanes %3zu "
                "+%zu -%zu edges\n",
                variants[i].name, bench::median(replay[i + 1]),
                bench::median(replay[i + 1]) / raw_replay, bench::median(host[i + 1]),
                bench::median(host[i + 1]) / raw_host, st.shape_lanes, st.edges_shape_added,
                st.edges_shape_dropped);
  }
  print(learning, exes[3].stats());
  BENCH_CUDA(cudaGraphExecDestroy(raw));
}

}  // namespace

int main(int argc, char** argv) {
  if (bench::no_gpu("bench_shaping")) return 0;
  // About 2 and 20 us at the H200's ~1.98 GHz; "mixed": every 8th kernel ~20 us, the
  // others ~2 us (where counting units misleads).
  const char* kernels[] = {"empty", "~2 us", "~20 us", "mixed"};
  auto cycles_of = [](const char* kernel, std::size_t n) {
    const std::string k = kernel;
    Cycles c(n, k == "empty" ? 0 : k == "~2 us" ? 4'000 : 40'000);
    if (k == "mixed") {
      for (std::size_t v = 0; v < n; ++v) c[v] = v % 8 == 7 ? 40'000 : 4'000;
    }
    return c;
  };
  struct Dag {
    std::string name;
    Parents parents;
  };
  std::vector<Dag> dags = {{"chain 1000", chains(1, 1000)},
                           {"8 x 125", chains(8, 125)},
                           {"fork-join 1-64-1 x 16", fork_join(64, 16)},
                           {"random 200", random_dag(200)},
                           {"random 1000", random_dag(1000)},
                           {"random 4000", random_dag(4000)}};
  const std::string only = argc > 1 ? argv[1] : "";
  std::printf("bench_shaping: medians of %d trials of %d replays; ratios against the raw graph\n",
              trials, replays);
  Queue queue(Device::cuda(0));
  for (const Dag& d : dags) {
    if (!only.empty() && d.name.find(only) == std::string::npos) continue;
    for (const char* kernel : kernels) {
      const std::string what = d.name + ", " + kernel;
      measure(what.c_str(), d.parents, cycles_of(kernel, d.parents.size()), queue);
    }
  }
  return 0;
}
