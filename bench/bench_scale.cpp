// bench_scale: compile time of the shapes issue 31 (item 5) found growing with the square, at
// 1,000 / 10,000 / 100,000 commands' worth, on the host backend: n transients alive together,
// n transients chained (one alive at a time), and n host tasks writing one buffer unordered
// under Hazards::validate (timed to the Error(hazard) it throws), beside the same writers
// ordered by edges (what validate passes: the error's path should cost no more).
// Usage: bench_scale [--only alive|chained|writers|ordered] [--trials N] [n...]
//        (default: 1000 10000 100000)
#include "../tests/support/scale_shapes.hpp"

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
using namespace cmdgraph::testing;

struct Outcome {
  double compile_ms = 0, plan_ms = 0;
  std::size_t arena = 0, message = 0;  // arena bytes (transients); what() length (writers)
};

Outcome run_once(const std::string& shape, std::size_t n) {
  Buffer<float> buffer(Device::host(), scale_floats);
  CommandBuffer cmd("bench_scale");
  CompileOptions options;
  if (shape == "alive") record_transients_alive(cmd, n);
  if (shape == "chained") record_transients_chained(cmd, n);
  if (shape == "writers" || shape == "ordered") {
    shape == "writers" ? record_unordered_writers(cmd, n, buffer)
                       : record_ordered_writers(cmd, n, buffer);
    options.hazards = Hazards::validate;
  }
  Outcome out;
  const auto start = std::chrono::steady_clock::now();
  const auto since = [&] {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
        .count();
  };
  try {
    Executable exe = compile(cmd, Device::host(), options);
    out.compile_ms = since();  // stats() is read after: its first read works out the lint
    out.plan_ms = exe.stats().plan_ms;
    out.arena = exe.stats().transient_bytes;
  } catch (const Error& e) {
    out.compile_ms = since();
    out.message = std::strlen(e.what());
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> shapes{"alive", "chained", "writers", "ordered"};
  std::vector<std::size_t> sizes;
  int trials = 3;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
      shapes = {argv[++i]};
    } else if (std::strcmp(argv[i], "--trials") == 0 && i + 1 < argc) {
      trials = std::max(1, std::atoi(argv[++i]));
    } else {
      sizes.push_back(std::strtoull(argv[i], nullptr, 10));
    }
  }
  if (sizes.empty()) sizes = {1'000, 10'000, 100'000};

  std::printf("%-9s %9s %11s %11s %12s %9s\n", "shape", "n", "compile ms", "plan ms",
              "arena bytes", "what()");
  for (const std::string& shape : shapes) {
    for (const std::size_t n : sizes) {
      // Best of `trials`: the plan is deterministic, the machine is not.
      Outcome best;
      best.compile_ms = 1e300;
      for (int t = 0; t < trials; ++t) {
        const Outcome o = run_once(shape, n);
        if (o.compile_ms < best.compile_ms) best = o;
      }
      std::printf("%-9s %9zu %11.2f %11.2f %12zu %9zu\n", shape.c_str(), n, best.compile_ms,
                  best.plan_ms, best.arena, best.message);
      std::fflush(stdout);
    }
  }
  return 0;
}
