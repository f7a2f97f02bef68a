// Graph shaping: lane edges for the cuda_graph backend (CompileOptions::shape), chosen on the
// plan's top-level DAG counting each command as one unit of time. Pure scheduling, no CUDA.
#pragma once

#include "plan/adjacency.hpp"
#include "plan/plan.hpp"

#include <cmdgraph/graph_shape.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace cmdgraph::detail {

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

/// Shapes the top level of `plan` as `shape` asks. Commands that take time (traits weight > 0)
/// are list-scheduled in order of earliest start, critical path first, onto the lanes: each
/// goes to the lane of a parent it directly follows when that lane is free, else to the lane
/// idle longest, and gets an edge from the command before it there. The plan's reduced edges
/// and those lane edges are then reduced again, so every plan edge is still implied and the
/// result has no cycle. Commands of weight 0 (barriers, events) and commands with a priority of
/// their own take no lane. Unshaped when the lanes add no edge. \pre shape is automatic() or lanes(n) with n >= 1, or off().
GraphShaping shape_graph(const Plan& plan, GraphShape shape);

}  // namespace cmdgraph::detail
