// bench_hazards: what declared access costs (issue 14), recording included. N commands touch
// random slices of 1,000 buffers (1 to 3 each, one in three a write), compiled for the host:
//  - edges:    no declarations, every command after the last one that touched each of its
//              buffers (what a careful hand would write), nothing checked;
//  - validate: the same edges, and declarations, checked (the default once anything declares);
//  - infer:    declarations only, the edges inferred;
//  - off:      declarations and edges, Hazards::off (the cost of recording declarations).
// Configurations alternate trial by trial; medians of 7. Times are wall clock, and the
// analysis's ratio is given again in this thread's CPU time ("x edges cpu"), which a machine
// shared with other work disturbs less. With --nearby, memory is reused
// nearby instead, as in pipelines and frame loops: a buffer per 10 commands, each command
// touching one of the 100 after its tenth (every buffer within 1,000 commands), so the
// conflicting pairs and how far they reach stay the same per command at every size.
// Usage: bench_hazards [--nearby] [commands...]
#include <cmdgraph/cmdgraph.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string_view>
#include <ctime>
#include <vector>

using namespace cmdgraph;

namespace {

constexpr std::size_t buffer_size = 4096;

struct Nop {
  void operator()(std::size_t) const {}
};

struct Touch {
  std::size_t buffer, offset, count;
  bool write;
};

std::vector<std::vector<Touch>> random_program(std::size_t n, std::size_t buffer_count,
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

enum class Config { edges, validate, infer, off };
const char* to_string(Config c) {
  switch (c) {
    case Config::edges: return "edges";
    case Config::validate: return "validate";
    case Config::infer: return "infer";
    case Config::off: return "off";
  }
  return "?";
}

struct Trial {
  double record_ms, compile_ms, cpu_ms;
  ExecutableStats stats;
};

// This thread's CPU time, in milliseconds.
double cpu_now() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) * 1e-6;
}

Trial run(Config config, const std::vector<std::vector<Touch>>& program,
          const std::vector<Buffer<float>>& buffers) {
  using clock = std::chrono::steady_clock;
  const auto ms = [](clock::time_point a, clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
  };
  const bool declare = config != Config::edges, edges = config != Config::infer;
  const double cpu_start = cpu_now();
  const auto start = clock::now();
  CommandBuffer cmd("bench_hazards");
  std::vector<Command> last(buffers.size());  // the last command that touched each buffer
  for (const auto& touches : program) {
    Command c = cmd.parallel_for(1, Nop{});
    for (const Touch& t : touches) {
      const View<float> slice = buffers[t.buffer].subview(t.offset, t.count);
      if (declare) t.write ? c.writes(slice) : c.reads(slice);
      if (edges && last[t.buffer].valid() && last[t.buffer] != c) c.after(last[t.buffer]);
      last[t.buffer] = c;
    }
  }
  const auto recorded = clock::now();
  const Hazards hazards = config == Config::infer ? Hazards::infer
                          : config == Config::off ? Hazards::off
                                                  : Hazards::automatic;
  Executable exe = compile(cmd, Device::host(), {.hazards = hazards});
  const auto compiled = clock::now();
  const double cpu = cpu_now() - cpu_start;
  return {ms(start, recorded), ms(recorded, compiled), cpu, exe.stats()};
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::size_t> sizes;
  bool nearby = false;
  for (int i = 1; i < argc; ++i) {
    if (std::string_view(argv[i]) == "--nearby") {
      nearby = true;
    } else {
      sizes.push_back(std::strtoull(argv[i], nullptr, 10));
    }
  }
  if (sizes.empty()) sizes = {10'000, 100'000};

  std::printf("%9s %-9s %10s %11s %10s %9s %9s %12s %9s %9s %9s\n", "commands", "config",
              "record ms", "compile ms", "total ms", "x edges", "cpu ms", "x edges cpu", "edges",
              "inferred", "checked");
  const Config configs[] = {Config::edges, Config::validate, Config::infer, Config::off};
  for (const std::size_t n : sizes) {
    const std::size_t buffer_count = nearby ? std::max<std::size_t>(100, n / 10) : 1000;
    std::vector<Buffer<float>> buffers;
    for (std::size_t b = 0; b < buffer_count; ++b) buffers.emplace_back(Device::host(), buffer_size);
    const auto program = random_program(n, buffer_count, nearby, 14);
    std::vector<double> record[4], compile[4], cpu[4];
    ExecutableStats stats[4];
    for (int trial = 0; trial < 7; ++trial) {
      for (int c = 0; c < 4; ++c) {
        const Trial t = run(configs[c], program, buffers);
        record[c].push_back(t.record_ms);
        compile[c].push_back(t.compile_ms);
        cpu[c].push_back(t.cpu_ms);
        stats[c] = t.stats;
      }
    }
    const double base = median(record[0]) + median(compile[0]), cpu_base = median(cpu[0]);
    for (int c = 0; c < 4; ++c) {
      const double total = median(record[c]) + median(compile[c]);
      std::printf("%9zu %-9s %10.2f %11.2f %10.2f %8.3fx %9.2f %11.3fx %9zu %9zu %9zu\n", n,
                  to_string(configs[c]), median(record[c]), median(compile[c]), total,
                  total / base, median(cpu[c]), median(cpu[c]) / cpu_base,
                  stats[c].edges_reduced, stats[c].edges_inferred, stats[c].pairs_validated);
    }
  }
  return 0;
}
