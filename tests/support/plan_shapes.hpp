// Recording shapes that stress the build stage's transitive reduction: chains closed by a
// barrier or a join of every step, layers between barriers, ladders and pipelines. Shared by
// the reliability tests and bench/bench_plan.cpp; public API only.
#pragma once

#include <cmdgraph/cmdgraph.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace cmdgraph::testing {

enum class PlanShape {
  chain_barrier,     // a chain of n, then a barrier (an edge from every step)
  chain_join,        // a chain of n, then one command after every step
  layers_barriers,   // n/100 layers of 100 independent commands, a barrier after each
  ladder,            // two chains A, B of n/2 with A_i -> B_i, recorded A_0, B_0, A_1, ...
  ladder_by_chain,   // the same edges, recorded A_0..A_k first, then B_0..B_k
  lagging_ladder,    // A_i -> B_{i+k/2}: each rung lands half the ladder further on
  pipeline,          // 8 stages of n/8 items: (s, i) -> (s+1, i) and (s, i) -> (s, i+1)
};

inline const char* to_string(PlanShape s) {
  switch (s) {
    case PlanShape::chain_barrier: return "chain + barrier";
    case PlanShape::chain_join: return "chain + join of every step";
    case PlanShape::layers_barriers: return "layers of 100 + barriers";
    case PlanShape::ladder: return "ladder (interleaved)";
    case PlanShape::ladder_by_chain: return "ladder (chain by chain)";
    case PlanShape::lagging_ladder: return "lagging ladder";
    case PlanShape::pipeline: return "pipeline 8 stages";
  }
  return "?";
}

inline constexpr PlanShape all_plan_shapes[] = {
    PlanShape::chain_barrier, PlanShape::chain_join,      PlanShape::layers_barriers,
    PlanShape::ladder,        PlanShape::ladder_by_chain, PlanShape::lagging_ladder,
    PlanShape::pipeline,
};

/// Records about `n` host commands (doing nothing) of `shape` into `cmd`.
inline void record_shape(CommandBuffer& cmd, PlanShape shape, std::size_t n) {
  auto task = [] { return [] {}; };
  switch (shape) {
    case PlanShape::chain_barrier:
    case PlanShape::chain_join: {
      std::vector<Command> steps;
      steps.reserve(n);
      steps.push_back(cmd.host(task()));
      for (std::size_t i = 1; i < n; ++i) steps.push_back(cmd.host(task()).after(steps.back()));
      if (shape == PlanShape::chain_barrier) {
        cmd.barrier();
      } else {
        cmd.host(task()).after_all(steps);
      }
      break;
    }
    case PlanShape::layers_barriers:
      for (std::size_t layer = 0; layer < n / 100; ++layer) {
        for (int i = 0; i < 100; ++i) cmd.host(task());
        cmd.barrier();
      }
      break;
    case PlanShape::ladder:
    case PlanShape::ladder_by_chain:
    case PlanShape::lagging_ladder: {
      const std::size_t k = n / 2;
      std::vector<Command> a(k), b(k);
      if (shape == PlanShape::ladder) {
        for (std::size_t i = 0; i < k; ++i) {
          a[i] = cmd.host(task());
          b[i] = cmd.host(task());
        }
      } else {
        for (auto& c : a) c = cmd.host(task());
        for (auto& c : b) c = cmd.host(task());
      }
      const std::size_t lag = shape == PlanShape::lagging_ladder ? k / 2 : 0;
      for (std::size_t i = 0; i + 1 < k; ++i) {
        a[i + 1].after(a[i]);
        b[i + 1].after(b[i]);
      }
      for (std::size_t i = 0; i + lag < k; ++i) b[i + lag].after(a[i]);
      break;
    }
    case PlanShape::pipeline: {
      constexpr std::size_t stages = 8;
      const std::size_t items = n / stages;
      std::vector<Command> prev(items), cur(items);
      for (std::size_t s = 0; s < stages; ++s) {
        for (std::size_t i = 0; i < items; ++i) {
          cur[i] = cmd.host(task());
          if (i > 0) cur[i].after(cur[i - 1]);
          if (s > 0) cur[i].after(prev[i]);
        }
        std::swap(prev, cur);
      }
      break;
    }
  }
}

}  // namespace cmdgraph::testing
