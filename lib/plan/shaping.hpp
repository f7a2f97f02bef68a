// Graph shaping: lane edges for the cuda_graph backend (CompileOptions::shape), chosen on the
// plan's top-level DAG from the commands' costs (or counting each as one unit of time). Pure
// scheduling, no CUDA.
#pragma once

#include "plan/adjacency.hpp"
#include "plan/plan.hpp"

#include <cmdgraph/graph_shape.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace cmdgraph::detail {

/// What a graph node adds to its kernel's time when it follows its parent: a chain of 1,000
/// kernels replayed in 514 us with empty kernels, 2,512 us with ~2 us ones and 20,913 us with
/// ~20 us ones on the H200 (bench/RESULTS.md, run 66). Shaping counts a command as its cost
/// plus this.
inline constexpr std::chrono::nanoseconds shaping_launch_unit{500};

/// How often the device starts a graph node at most: nodes with no edge between them replayed
/// at one per 174-213 ns on the H200 (8 x 125 empty kernels in 178 us, a random DAG of 4,000
/// on 8 lanes in 696 us; run 66). Shaping takes a little less, so that it never counts on
/// fewer lanes than the device keeps busy: with empty kernels a handful of lanes then serve
/// where the widest level would take hundreds.
inline constexpr std::chrono::nanoseconds shaping_dispatch_gap{150};

/// The edges of a shaped graph and what shaping did.
struct GraphShaping {
  std::uint32_t lanes = 0;        // 0: unshaped, the plan's reduced edges stand
  Adjacency parents;              // when shaped: each command's parents in the shaped graph
  std::vector<std::uint32_t> order;  // when shaped: a topological order of the shaped graph
  std::size_t edges_added = 0;    // lane edges the shaped graph holds beyond the plan's
  std::size_t edges_dropped = 0;  // plan edges the lane edges imply, left out
  std::string reason;             // for ExecutableStats::shape_reason
  /// automatic() left it unshaped only for want of costs: measured durations (shape_graph's
  /// `measured`) could supply them.
  bool wants_costs = false;

  bool shaped() const noexcept { return lanes > 0; }
};

/// Shapes the top level of `plan` as `shape` asks. Each command is counted as taking its cost
/// plus shaping_launch_unit (automatic(); lanes(n) when every command that takes a lane has a
/// cost), or one unit (uniform(); lanes(n) otherwise); barriers and events none. The run
/// without lanes is modelled: commands start as their parents finish, in that order (the
/// heavier path below first among equals, then recording order), and with costs a command
/// that takes time starts at least shaping_dispatch_gap after the one before it.
/// automatic() and uniform() take as many lanes as the most lane-taking commands that run at
/// once in that model, so that none starts later. In the model's order each command goes to
/// the lane of a parent it directly follows when that lane is free, else to the lane idle
/// longest, and gets an edge from the command before it there. The plan's reduced edges and
/// those lane edges are then reduced again, so every plan edge is still implied and the
/// result has no cycle. Commands of weight 0 (barriers, events) and commands with a priority
/// of their own take no lane. Unshaped when the lanes add no edge, and under automatic()
/// when a command that takes a lane has no cost (the reason counts them). `measured`, when
/// given, holds a duration for each top-level command (timed, or assumed): a command without a
/// cost of its own counts that instead, so automatic() shapes as if every command had one.
/// \pre shape is not lanes(0); `measured` is empty or has plan.size() durations.
GraphShaping shape_graph(const Plan& plan, GraphShape shape,
                         std::span<const std::chrono::nanoseconds> measured = {});

}  // namespace cmdgraph::detail
