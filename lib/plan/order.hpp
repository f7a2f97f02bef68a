// Topological order and cycle detection over a Boost.Graph adjacency_list.
#pragma once

#include "command/edge.hpp"

#include <cstdint>
#include <vector>

namespace cmdgraph::detail {

/// A topological order of `vertices` vertices under `edges` (parent -> child, distinct), or,
/// when there is a cycle, an empty order and one cycle as a vertex path (first != last,
/// closing back to the first).
struct OrderResult {
  std::vector<std::uint32_t> order;
  std::vector<std::uint32_t> cycle;
};
OrderResult topological_order(std::size_t vertices, const std::vector<Edge>& edges);

/// For each vertex, its children under `edges` that are not implied by other paths: the
/// transitive reduction, as (parent, child) pairs in `order`'s sense of parent first.
/// `position[v]` is v's place in a topological order. `edges_examined`, when given, receives
/// how many edges the searches looked at (the work, for tests that guard against quadratic
/// time without timing anything).
std::vector<Edge> transitive_reduction(std::size_t vertices, const std::vector<Edge>& edges,
                                       const std::vector<std::uint32_t>& position,
                                       std::uint64_t* edges_examined = nullptr);
/// The same reduction, by bitsets (plan/reach.hpp): linear when each vertex's children lie
/// within a bounded window of `position` after it, however many they are, as with edges
/// inferred from access (memory is reused nearby); where they span the whole order it costs
/// vertices x edges / 512. The search above handles long edges better, this wide fans.
std::vector<Edge> transitive_reduction_by_reach(std::size_t vertices,
                                                const std::vector<Edge>& edges,
                                                const std::vector<std::uint32_t>& position);

}  // namespace cmdgraph::detail
