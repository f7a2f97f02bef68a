// bench_plan: how long the build stage (plan: order, reduction, levels) takes for shapes that
// once made the transitive reduction quadratic, at 10k and 100k commands, compiled for the host.
// Usage: bench_plan [commands...]   (default: 10000 100000)
#include "../tests/support/plan_shapes.hpp"

#include <cmdgraph/cmdgraph.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char** argv) {
  using namespace cmdgraph;
  std::vector<std::size_t> sizes;
  for (int i = 1; i < argc; ++i) sizes.push_back(std::strtoull(argv[i], nullptr, 10));
  if (sizes.empty()) sizes = {10'000, 100'000};

  std::printf("%-28s %9s %9s %9s %11s %11s\n", "shape", "commands", "edges", "reduced",
              "plan ms", "compile ms");
  for (const std::size_t n : sizes) {
    for (const testing::PlanShape shape : testing::all_plan_shapes) {
      // Best of 3: the plan is deterministic, the machine is not.
      double best_plan = 1e300, best_compile = 1e300;
      ExecutableStats stats;
      for (int trial = 0; trial < 3; ++trial) {
        CommandBuffer cmd("bench_plan");
        testing::record_shape(cmd, shape, n);
        const auto start = std::chrono::steady_clock::now();
        Executable exe = compile(cmd, Device::host());
        const double compile_ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                .count();
        stats = exe.stats();
        best_plan = std::min(best_plan, stats.plan_ms);
        best_compile = std::min(best_compile, compile_ms);
      }
      std::printf("%-28s %9zu %9zu %9zu %11.2f %11.2f\n", testing::to_string(shape),
                  stats.commands, stats.edges_recorded, stats.edges_reduced, best_plan,
                  best_compile);
    }
  }
  return 0;
}
