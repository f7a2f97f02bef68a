// Graph shaping (CompileOptions::shape) against brute force: the shaped graph implies every
// edge of the plan, has no cycle and no redundant edge, its order is topological, and the
// automatic lane count never lengthens the schedule counted in units.
#include "plan/plan.hpp"
#include "plan/shaping.hpp"
#include "record/recording.hpp"
#include "support/random_dag.hpp"

#include <cmdgraph/cmdgraph.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <vector>

using namespace cmdgraph;
using namespace cmdgraph::testing;
using detail::GraphShaping;
using detail::Plan;

namespace {

void kernel_stub(int) {}

// Each vertex a kernel (one unit of time).
std::shared_ptr<const Plan> plan_of(const Dag& dag) {
  CommandBuffer cmd("shape");
  std::vector<Command> c;
  for (std::size_t v = 0; v < dag.size; ++v) {
    c.push_back(cmd.launch(&kernel_stub, LaunchConfig{{1}, {1}}, static_cast<int>(v)));
  }
  for (const auto& [p, k] : dag.edges) c[k].after(c[p]);
  return detail::build_plan(*detail::recording_of(cmd));
}

using Reach = std::vector<std::vector<bool>>;

// reach[u][v]: a path of at least one edge from u to v under `parents`.
Reach closure(std::size_t n, const detail::Adjacency& parents) {
  Reach reach(n, std::vector<bool>(n, false));
  for (std::uint32_t c = 0; c < n; ++c) {
    for (std::uint32_t p : parents[c]) reach[p][c] = true;
  }
  for (std::size_t k = 0; k < n; ++k)
    for (std::size_t i = 0; i < n; ++i)
      if (reach[i][k])
        for (std::size_t j = 0; j < n; ++j)
          if (reach[k][j]) reach[i][j] = true;
  return reach;
}

// The longest chain of commands (each one unit) under `parents`, visited in `order`.
std::uint32_t longest_chain(const detail::Adjacency& parents, const std::vector<std::uint32_t>& order) {
  std::vector<std::uint32_t> depth(order.size(), 1);
  std::uint32_t longest = 0;
  for (std::uint32_t c : order) {
    for (std::uint32_t p : parents[c]) depth[c] = std::max(depth[c], depth[p] + 1);
    longest = std::max(longest, depth[c]);
  }
  return longest;
}

// Everything shape_graph promises of a shaped result, checked by brute force.
void check_shaped(const Plan& plan, const GraphShaping& s) {
  const std::size_t n = plan.size();
  REQUIRE(s.order.size() == n);
  std::vector<std::uint32_t> position(n);
  for (std::uint32_t i = 0; i < n; ++i) position[s.order[i]] = i;
  for (std::uint32_t c = 0; c < n; ++c) {
    for (std::uint32_t p : s.parents[c]) CHECK(position[p] < position[c]);  // no cycle
  }
  const Reach reach = closure(n, s.parents);
  for (std::uint32_t c = 0; c < n; ++c) {
    for (std::uint32_t p : plan.parents[c]) CHECK(reach[p][c]);  // every plan edge implied
    for (std::uint32_t p : s.parents[c]) {                        // and no edge redundant
      bool implied = false;
      for (std::uint32_t q : s.parents[c]) implied = implied || (q != p && reach[p][q]);
      CHECK_FALSE(implied);
    }
  }
  std::size_t edges = 0, from_plan = 0;
  for (std::uint32_t c = 0; c < n; ++c) {
    for (std::uint32_t p : s.parents[c]) {
      ++edges;
      const auto ps = plan.parents[c];
      from_plan += std::find(ps.begin(), ps.end(), p) != ps.end();
    }
  }
  CHECK(s.edges_added == edges - from_plan);
  CHECK(s.edges_dropped == plan.children.edges() - from_plan);
}

}  // namespace

TEST_CASE("plan.shaping.implies_every_edge_with_no_cycle_and_nothing_redundant" *
          doctest::timeout(120)) {
  const DagShape shapes[] = {DagShape::layered, DagShape::random, DagShape::shuffled,
                             DagShape::fan, DagShape::chain};
  std::size_t shaped = 0;
  for (std::uint32_t seed = 0; seed < 60; ++seed) {
    const Dag dag = random_dag(shapes[seed % 5], 2 + seed * 3, seed);
    CAPTURE(seed);
    const auto plan = plan_of(dag);
    for (const GraphShape shape : {GraphShape::automatic(), GraphShape::lanes(1),
                                   GraphShape::lanes(2), GraphShape::lanes(5)}) {
      const GraphShaping s = detail::shape_graph(*plan, shape);
      CAPTURE(s.reason);
      if (!s.shaped()) continue;
      ++shaped;
      check_shaped(*plan, s);
    }
  }
  CHECK(shaped > 100);
}

TEST_CASE("plan.shaping.automatic_never_lengthens_the_schedule" * doctest::timeout(120)) {
  std::size_t added = 0;
  for (std::uint32_t seed = 0; seed < 40; ++seed) {
    const Dag dag = random_dag(seed % 2 ? DagShape::random : DagShape::layered, 20 + seed * 10, seed);
    CAPTURE(seed);
    const auto plan = plan_of(dag);
    const GraphShaping s = detail::shape_graph(*plan, GraphShape::automatic());
    CAPTURE(s.reason);
    if (!s.shaped()) continue;
    added += s.edges_added;
    CHECK(longest_chain(s.parents, s.order) == longest_chain(plan->parents, plan->order));
  }
  CHECK(added > 0);  // random DAGs do get lane edges
}

TEST_CASE("plan.shaping.one_lane_is_one_chain" * doctest::timeout(30)) {
  const auto plan = plan_of(random_dag(DagShape::layered, 60, 3));
  const GraphShaping s = detail::shape_graph(*plan, GraphShape::lanes(1));
  REQUIRE(s.shaped());
  CHECK(longest_chain(s.parents, s.order) == 60);
  for (std::uint32_t c = 0; c < plan->size(); ++c) CHECK(s.parents[c].size() <= 1);
}

TEST_CASE("plan.shaping.leaves_chains_fans_fork_joins_and_off_alone" * doctest::timeout(30)) {
  for (const DagShape shape : {DagShape::chain, DagShape::fan}) {
    const auto plan = plan_of(random_dag(shape, 64, 1));
    const GraphShaping s = detail::shape_graph(*plan, GraphShape::automatic());
    CAPTURE(s.reason);
    CHECK_FALSE(s.shaped());
    CHECK(s.reason.find("nothing to add") != std::string::npos);
  }
  // 1 -> 8 -> 1, four times over: each round's lanes run through its join.
  Dag fork_join;
  fork_join.size = 4 * 10;
  for (std::uint32_t r = 0; r < 4; ++r) {
    const std::uint32_t fork = r * 10, join = fork + 9;
    if (r > 0) fork_join.edges.emplace_back(fork - 1, fork);
    for (std::uint32_t i = 1; i <= 8; ++i) {
      fork_join.edges.emplace_back(fork, fork + i);
      fork_join.edges.emplace_back(fork + i, join);
    }
  }
  const GraphShaping rounds = detail::shape_graph(*plan_of(fork_join), GraphShape::automatic());
  CAPTURE(rounds.reason);
  CHECK_FALSE(rounds.shaped());
  CHECK(rounds.reason.find("nothing to add") != std::string::npos);

  const auto plan = plan_of(random_dag(DagShape::random, 64, 1));
  const GraphShaping off = detail::shape_graph(*plan, GraphShape::off());
  CHECK_FALSE(off.shaped());
  CHECK(off.reason == "off");
}

TEST_CASE("plan.shaping.lanes_zero_is_refused" * doctest::timeout(30)) {
  CommandBuffer cmd("zero");
  cmd.host([] {});
  CHECK_THROWS_AS(compile(cmd, Device::host(), {.shape = GraphShape::lanes(0)}), Error);
  CHECK_NOTHROW(compile(cmd, Device::host(), {.shape = GraphShape::off()}));
}

TEST_CASE("plan.shaping.prioritised_commands_keep_their_own_edges" * doctest::timeout(30)) {
  // clear -> {load, hold}; hold -> {probe0, probe1}: two lanes would put a probe after the
  // load, behind work it never depended on; probe1 has a priority of its own and keeps hold.
  CommandBuffer cmd("mixed");
  auto clear = cmd.launch(&kernel_stub, LaunchConfig{{1}, {1}}, 0);
  cmd.launch(&kernel_stub, LaunchConfig{{1}, {1}}, 1).after(clear).priority(Priority::low);
  auto hold = cmd.launch(&kernel_stub, LaunchConfig{{1}, {1}}, 2).after(clear);
  auto probe0 = cmd.launch(&kernel_stub, LaunchConfig{{1}, {1}}, 3).after(hold);
  auto probe1 = cmd.launch(&kernel_stub, LaunchConfig{{1}, {1}}, 4).after(hold)
                    .priority(Priority::high);
  const auto plan = detail::build_plan(*detail::recording_of(cmd));
  for (const GraphShape shape : {GraphShape::automatic(), GraphShape::lanes(2)}) {
    const GraphShaping s = detail::shape_graph(*plan, shape);
    CAPTURE(s.reason);
    const auto& parents = s.shaped() ? s.parents : plan->parents;
    CHECK(std::vector<std::uint32_t>(parents[probe1.index()].begin(),
                                     parents[probe1.index()].end()) ==
          std::vector<std::uint32_t>{hold.index()});
    CHECK(parents[probe0.index()].size() == 1);
  }
}
