// What declared access costs (issue 14), recording included, for bench_hazards (host backend)
// and bench_hazards_cuda (cuda_graph backend): N commands touch random slices of buffers
// (1 to 3 each, one in three a write), in four configurations:
//  - edges:    no declarations, every command after the last one that touched each of its
//              buffers (what a careful hand would write), nothing checked;
//  - validate: the same edges, and declarations, checked (the default once anything declares);
//  - infer:    declarations only, the edges inferred;
//  - off:      declarations and edges, Hazards::off (the cost of recording declarations);
//  - exact:    no declarations, the edges infer would find (worked out here, element by
//              element, before timing): the same graph as infer's, written by hand, so that
//              infer's cost is told apart from what compiling a more concurrent graph costs.
// Configurations alternate trial by trial; medians of 7. Times are wall clock, and the
// analysis's ratio is given again in this thread's CPU time ("x edges cpu"), which a machine
// shared with other work disturbs less. "lint ms" is what the first stats() then costs
// (validate's unneeded edges, worked out when asked). With --nearby, memory is reused nearby
// instead, as in pipelines and frame loops: a buffer per 10 commands, each command touching
// one of the 100 after its tenth (every buffer within 1,000 commands), so the conflicting
// pairs and how far they reach stay the same per command at every size.
#pragma once

#include <cmdgraph/cmdgraph.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <random>
#include <string_view>
#include <utility>
#include <vector>

namespace hazard_bench {

using namespace cmdgraph;

constexpr std::size_t buffer_size = 4096;

struct Touch {
  std::size_t buffer, offset, count;
  bool write;
};

inline std::vector<std::vector<Touch>> random_program(std::size_t n, std::size_t buffer_count,
                                                      bool nearby, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<std::vector<Touch>> program(n);
  for (std::size_t c = 0; c < n; ++c) {
    for (std::size_t k = 1 + rng() % 3; k > 0; --k) {
      const std::size_t count = 1 + rng() % 1024;
      const std::size_t buffer = nearby ? (c / 10 + rng() % 100) % buffer_count : rng() % buffer_count;
      program[c].push_back({buffer, rng() % (buffer_size - count + 1), count, rng() % 3 == 0});
    }
  }
  return program;
}

// The edges a hand ordering exactly the conflicting accesses writes, element by element: a
// read after the last writer; a write after the readers since the last write, or after that
// writer when nobody read since (as infer pairs them). As (parent, child) command pairs.
inline std::vector<std::pair<std::size_t, std::size_t>> exact_edges(
    const std::vector<std::vector<Touch>>& program, std::size_t buffer_count) {
  constexpr std::size_t none = ~std::size_t{0};
  struct Element {
    std::size_t writer = none;
    std::vector<std::size_t> readers;  // since the last write
  };
  std::vector<std::vector<Element>> memory(buffer_count, std::vector<Element>(buffer_size));
  std::vector<std::pair<std::size_t, std::size_t>> edges;
  for (std::size_t c = 0; c < program.size(); ++c) {
    std::vector<std::size_t> parents;
    for (const Touch& t : program[c]) {
      for (std::size_t i = t.offset; i < t.offset + t.count; ++i) {
        Element& e = memory[t.buffer][i];
        if (e.writer != none && !(t.write && !e.readers.empty())) parents.push_back(e.writer);
        if (t.write) {
          parents.insert(parents.end(), e.readers.begin(), e.readers.end());
          e.readers.clear();
        }
      }
    }
    for (const Touch& t : program[c]) {  // then what c leaves, once all it read is paired
      for (std::size_t i = t.offset; i < t.offset + t.count; ++i) {
        Element& e = memory[t.buffer][i];
        if (t.write) {
          e.writer = c;
          e.readers.clear();
        } else if (e.readers.empty() || e.readers.back() != c) {
          e.readers.push_back(c);
        }
      }
    }
    std::sort(parents.begin(), parents.end());
    parents.erase(std::unique(parents.begin(), parents.end()), parents.end());
    for (const std::size_t p : parents) {
      if (p != c) edges.emplace_back(p, c);
    }
  }
  return edges;
}

enum class Config { edges, validate, infer, off, exact };
inline const char* to_string(Config c) {
  switch (c) {
    case Config::edges: return "edges";
    case Config::validate: return "validate";
    case Config::infer: return "infer";
    case Config::off: return "off";
    case Config::exact: return "exact";
  }
  return "?";
}

struct Trial {
  double record_ms, compile_ms, cpu_ms, lint_ms;
  ExecutableStats stats;
};

// This thread's CPU time, in milliseconds.
inline double cpu_now() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) * 1e-6;
}

// One trial: `record(cmd)` records one command (a kernel, a parallel_for) and returns it.
template <class Record>
Trial run(Config config, const std::vector<std::vector<Touch>>& program,
          const std::vector<std::pair<std::size_t, std::size_t>>& exact,
          const std::vector<Buffer<float>>& buffers, Device device, const CompileOptions& base,
          Record record) {
  using clock = std::chrono::steady_clock;
  const auto ms = [](clock::time_point a, clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
  };
  const bool declare = config != Config::edges && config != Config::exact;
  const bool edges = config != Config::infer && config != Config::exact;
  const double cpu_start = cpu_now();
  const auto start = clock::now();
  CommandBuffer cmd("bench_hazards");
  std::vector<Command> last(buffers.size());  // the last command that touched each buffer
  std::vector<Command> made;
  made.reserve(program.size());
  auto next_exact = exact.begin();
  for (const auto& touches : program) {
    Command c = record(cmd);
    made.push_back(c);
    for (; config == Config::exact && next_exact != exact.end() && next_exact->second == made.size() - 1;
         ++next_exact) {
      c.after(made[next_exact->first]);
    }
    for (const Touch& t : touches) {
      const View<float> slice = buffers[t.buffer].subview(t.offset, t.count);
      if (declare) t.write ? c.writes(slice) : c.reads(slice);
      if (edges && last[t.buffer].valid() && last[t.buffer] != c) c.after(last[t.buffer]);
      last[t.buffer] = c;
    }
  }
  const auto recorded = clock::now();
  CompileOptions options = base;
  options.hazards = config == Config::infer ? Hazards::infer
                    : config == Config::off ? Hazards::off
                                            : Hazards::automatic;
  Executable exe = compile(cmd, device, options);
  const auto compiled = clock::now();
  const double cpu = cpu_now() - cpu_start;
  ExecutableStats stats = exe.stats();
  return {ms(start, recorded), ms(recorded, compiled), cpu, ms(compiled, clock::now()), stats};
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The bench's main: arguments [--nearby] [--only CONFIG] [commands...]; buffers of `device`.
// --only runs the edge-only build and CONFIG alone (to profile one configuration).
template <class Record>
int bench_main(int argc, char** argv, Device device, const CompileOptions& base, Record record) {
  std::vector<std::size_t> sizes;
  bool nearby = false;
  std::string_view only;
  for (int i = 1; i < argc; ++i) {
    if (std::string_view(argv[i]) == "--nearby") {
      nearby = true;
    } else if (std::string_view(argv[i]) == "--only" && i + 1 < argc) {
      only = argv[++i];
    } else {
      sizes.push_back(std::strtoull(argv[i], nullptr, 10));
    }
  }
  if (sizes.empty()) sizes = {10'000, 100'000};

  std::printf("%9s %-9s %10s %11s %10s %9s %9s %12s %8s %9s %9s %9s\n", "commands", "config",
              "record ms", "compile ms", "total ms", "x edges", "cpu ms", "x edges cpu",
              "lint ms", "edges", "inferred", "checked");
  const Config configs[] = {Config::edges, Config::validate, Config::infer, Config::off,
                            Config::exact};
  constexpr int config_count = 5;
  for (const std::size_t n : sizes) {
    const std::size_t buffer_count = nearby ? std::max<std::size_t>(100, n / 10) : 1000;
    std::vector<Buffer<float>> buffers;
    for (std::size_t b = 0; b < buffer_count; ++b) buffers.emplace_back(device, buffer_size);
    const auto program = random_program(n, buffer_count, nearby, 14);
    const bool wants_exact = only.empty() || only == to_string(Config::exact);
    const auto exact = wants_exact ? exact_edges(program, buffer_count)
                                   : std::vector<std::pair<std::size_t, std::size_t>>{};
    std::vector<double> record_ms[config_count], compile_ms[config_count], cpu[config_count],
        lint[config_count];
    ExecutableStats stats[config_count];
    for (int trial = 0; trial < 7; ++trial) {
      for (int c = 0; c < config_count; ++c) {
        if (c > 0 && !only.empty() && only != to_string(configs[c])) continue;
        const Trial t = run(configs[c], program, exact, buffers, device, base, record);
        record_ms[c].push_back(t.record_ms);
        compile_ms[c].push_back(t.compile_ms);
        cpu[c].push_back(t.cpu_ms);
        lint[c].push_back(t.lint_ms);
        stats[c] = t.stats;
      }
    }
    const double base_ms = median(record_ms[0]) + median(compile_ms[0]), cpu_base = median(cpu[0]);
    for (int c = 0; c < config_count; ++c) {
      if (record_ms[c].empty()) continue;
      const double total = median(record_ms[c]) + median(compile_ms[c]);
      std::printf("%9zu %-9s %10.2f %11.2f %10.2f %8.3fx %9.2f %11.3fx %8.2f %9zu %9zu %9zu\n", n,
                  to_string(configs[c]), median(record_ms[c]), median(compile_ms[c]), total,
                  total / base_ms, median(cpu[c]), median(cpu[c]) / cpu_base, median(lint[c]),
                  stats[c].edges_reduced, stats[c].edges_inferred, stats[c].pairs_validated);
    }
  }
  return 0;
}

}  // namespace hazard_bench
