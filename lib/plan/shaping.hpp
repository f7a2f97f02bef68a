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
#include <string>
#include <vector>

namespace cmdgraph::detail {

/// The least time shaping counts a command that takes time as taking, whatever its cost: a
/// graph node takes about this long however little its kernel does (a chain of 1,000 empty
/// kernels replayed in 514 us on the H200, bench/RESULTS.md, run 52). Counting less would
/// model commands as running together that in fact follow each other through CUDA's launch.
inline constexpr std::chrono::nanoseconds shaping_launch_unit{500};

/// The edges of a shaped graph and what shaping did.
struct GraphShaping {
  std::uint32_t lanes = 0;        // 0: unshaped, the plan's reduced edges stand
  Adjacency parents;              // when shaped: each command's parents in the shaped graph
  std::vector<std::uint32_t> order;  // when shaped: a topological order of the shaped graph
  std::size_t edges_added = 0;    // lane edges the shaped graph holds beyond the plan's
  std::size_t edges_dropped = 0;  // plan edges the lane edges imply, left out
  std::string reason;             // for ExecutableStats::shape_reason

  bool shaped() const noexcept { return lanes > 0; }
};

/// Shapes the top level of `plan` as `shape` asks. Each command is counted as taking its cost,
/// at least shaping_launch_unit (automatic(); lanes(n) when every command that takes a lane
/// has a cost), or one unit (uniform(); lanes(n) otherwise); barriers and events none. Commands
/// are placed at their earliest starts along the plan's edges; automatic() and uniform() take
/// as many lanes as the most lane-taking commands that run at once there, so that none
/// starts later. In order of earliest start, critical path first, each command goes to the
/// lane of a parent it directly follows when that lane is free, else to the lane idle
/// longest, and gets an edge from the command before it there. The plan's reduced edges and
/// those lane edges are then reduced again, so every plan edge is still implied and the
/// result has no cycle. Commands of weight 0 (barriers, events) and commands with a priority
/// of their own take no lane. Unshaped when the lanes add no edge, and under automatic()
/// when a command that takes a lane has no cost (the reason counts them).
/// \pre shape is not lanes(0).
GraphShaping shape_graph(const Plan& plan, GraphShape shape);

}  // namespace cmdgraph::detail
