// Topological order and cycle detection over a Boost.Graph compressed sparse row graph.
#pragma once

#include "command/edge.hpp"

#include <cstdint>
#include <optional>
#include <vector>

namespace cmdgraph::detail {

/// A topological order of `vertices` vertices under `edges` (parent -> child, sorted and
/// distinct), or, when there is a cycle, an empty order and one cycle as a vertex path
/// (first != last, closing back to the first).
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
/// The same search, given up (nullopt) once it has examined more than `budget` edges.
std::optional<std::vector<Edge>> transitive_reduction_within(
    std::size_t vertices, const std::vector<Edge>& edges, const std::vector<std::uint32_t>& position,
    std::uint64_t budget, std::uint64_t* edges_examined = nullptr);
/// The same reduction, by bitsets (plan/reach.hpp): linear when each vertex's children lie
/// within a bounded window of `position` after it, however many they are, as with edges
/// inferred from access (memory is reused nearby); where they span the whole order it costs
/// vertices x edges / 512. The search above handles long edges better, this wide fans.
std::vector<Edge> transitive_reduction_by_reach(std::size_t vertices,
                                                const std::vector<Edge>& edges,
                                                const std::vector<std::uint32_t>& position);

/// How many edges per edge (and vertex) the search may examine before reduce_edges gives it
/// up for the bitsets: every shape of tests/support/plan_shapes.hpp takes at most 4 (tested
/// in reliability.reduction_work_is_linear_on_every_shape), while wide fans (a write after
/// every reader since, each reader after the writer before) made it walk each fan's window
/// again for every child, 5 s at 100,000 commands where the bitsets take 0.5 s. What the
/// search examined before giving up is lost, so the budget is no larger than that.
constexpr std::uint64_t search_budget_per_edge = 4;
/// The transitive reduction, as both above give it: by search, unless it examines more than
/// search_budget_per_edge edges per edge, then by bitsets. Which one suits depends on the
/// shape of the edges, not on who wrote them (recorded by hand or inferred from access).
std::vector<Edge> reduce_edges(std::size_t vertices, const std::vector<Edge>& edges,
                               const std::vector<std::uint32_t>& position);

}  // namespace cmdgraph::detail
