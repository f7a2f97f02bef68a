// The build stage: order, transitive reduction against brute force, levels, critical path,
// flattening, and 100,000-command shapes without recursion.
#include "plan/flat_plan.hpp"
#include "plan/order.hpp"
#include "plan/plan.hpp"
#include "record/recording.hpp"
#include "support/random_dag.hpp"

#include <cmdgraph/cmdgraph.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <set>

using namespace cmdgraph;
using namespace cmdgraph::testing;
using detail::Plan;

namespace {

std::vector<Command> record(CommandBuffer& cmd, const Dag& dag) {
  std::vector<Command> c;
  c.reserve(dag.size);
  for (std::size_t v = 0; v < dag.size; ++v) c.push_back(cmd.host([] {}));
  for (const auto& [p, k] : dag.edges) c[k].after(c[p]);
  return c;
}

std::shared_ptr<const Plan> plan_of(const CommandBuffer& cmd) {
  return detail::build_plan(*detail::recording_of(cmd));
}

using EdgeSet = std::set<std::pair<std::uint32_t, std::uint32_t>>;

EdgeSet reduced_edges(const Plan& plan) {
  EdgeSet s;
  for (std::uint32_t v = 0; v < plan.size(); ++v) {
    for (std::uint32_t k : plan.dag->children[v]) s.emplace(v, k);
  }
  return s;
}

// Brute force: (u, v) stays iff it is an edge and no other path leads from u to v.
EdgeSet brute_force_reduction(const Dag& dag) {
  const std::size_t n = dag.size;
  std::vector<std::vector<bool>> reach(n, std::vector<bool>(n, false));
  EdgeSet edges(dag.edges.begin(), dag.edges.end());
  for (const auto& [p, c] : edges) reach[p][c] = true;
  for (std::size_t k = 0; k < n; ++k)
    for (std::size_t i = 0; i < n; ++i)
      if (reach[i][k])
        for (std::size_t j = 0; j < n; ++j)
          if (reach[k][j]) reach[i][j] = true;
  EdgeSet kept;
  for (const auto& [u, v] : edges) {
    bool implied = false;
    for (const auto& [a, b] : edges) {
      if (a == u && b != v && reach[b][v]) implied = true;
    }
    if (!implied) kept.emplace(u, v);
  }
  return kept;
}

}  // namespace

TEST_CASE("plan.dag->order.respects_every_edge" * doctest::timeout(60)) {
  for (std::uint32_t seed = 0; seed < 50; ++seed) {
    const Dag dag = random_dag(DagShape::shuffled, 300, seed);
    CommandBuffer cmd("order");
    record(cmd, dag);
    auto plan = plan_of(cmd);
    REQUIRE(plan->dag->order.size() == dag.size);
    for (const auto& [p, c] : dag.edges) CHECK(plan->dag->position[p] < plan->dag->position[c]);
  }
}

TEST_CASE("plan.reduction.triangle_keeps_two" * doctest::timeout(10)) {
  CommandBuffer cmd("tri");
  auto a = cmd.host([] {});
  auto b = cmd.host([] {}).after(a);
  auto c = cmd.host([] {}).after(b, a);
  auto plan = plan_of(cmd);
  CHECK(plan->dag->edges.size() == 3);
  CHECK(reduced_edges(*plan) == EdgeSet{{a.index(), b.index()}, {b.index(), c.index()}});
  CHECK(plan->dag->parents[c.index()].size() == 1);
}

TEST_CASE("plan.reduction.matches_brute_force" * doctest::timeout(120)) {
  const DagShape shapes[] = {DagShape::layered, DagShape::random, DagShape::shuffled, DagShape::fan};
  for (std::uint32_t seed = 0; seed < 60; ++seed) {
    const Dag dag = random_dag(shapes[seed % 4], 2 + seed * 2, seed);
    CAPTURE(seed);
    CommandBuffer cmd("reduce");
    record(cmd, dag);
    CHECK(reduced_edges(*plan_of(cmd)) == brute_force_reduction(dag));
  }
}

TEST_CASE("plan.reduction.by_reach_matches_the_search" * doctest::timeout(120)) {
  // The bitset reduction (reduce_edges falls back to it) gives the search's edges in its order,
  // over shapes with wide fans and DAGs large enough for several passes of 512 sources.
  const DagShape shapes[] = {DagShape::layered, DagShape::random, DagShape::shuffled, DagShape::fan,
                             DagShape::chain};
  for (std::uint32_t seed = 0; seed < 40; ++seed) {
    const std::size_t n = seed < 30 ? 2 + seed * 7 : 1500 + seed * 40;
    const Dag dag = random_dag(shapes[seed % 5], n, seed);
    CAPTURE(seed);
    CommandBuffer cmd("reduce");
    record(cmd, dag);
    const auto plan = plan_of(cmd);
    const detail::PlanDag& reduced = *plan->dag;
    const auto searched = detail::transitive_reduction(n, reduced.edges, reduced.position);
    CHECK(detail::transitive_reduction_by_reach(n, reduced.edges, reduced.position) == searched);
    if (n < 200) {
      EdgeSet kept;
      for (const detail::Edge& e : searched) kept.emplace(e.parent, e.child);
      CHECK(kept == brute_force_reduction(dag));
    }
  }
}

TEST_CASE("plan.levels_and_critical_path" * doctest::timeout(10)) {
  // a -> b -> c -> d and a -> e -> d: levels 0,1,2,3 and 1; the critical path is a b c d.
  CommandBuffer cmd("lv");
  auto a = cmd.host([] {});
  auto b = cmd.host([] {}).after(a);
  auto c = cmd.host([] {}).after(b);
  auto e = cmd.host([] {}).after(a);
  auto d = cmd.host([] {}).after(c, e);
  auto plan = plan_of(cmd);
  CHECK(plan->dag->level[a.index()] == 0);
  CHECK(plan->dag->level[b.index()] == 1);
  CHECK(plan->dag->level[e.index()] == 1);
  CHECK(plan->dag->level[d.index()] == 3);
  CHECK(plan->dag->level_count == 4);
  CHECK(plan->dag->critical_path ==
        std::vector<std::uint32_t>{a.index(), b.index(), c.index(), d.index()});
  CHECK(plan->dag->bottom[a.index()] == 4);
}

TEST_CASE("plan.dag->critical_path.ignores_free_commands" * doctest::timeout(10)) {
  // Barriers weigh nothing: a chain of barriers loses to one real command.
  CommandBuffer cmd("w");
  auto a = cmd.host([] {});
  cmd.barrier();
  cmd.host([] {}).after(a);
  auto plan = plan_of(cmd);
  CHECK(plan->dag->bottom[a.index()] == 2);
  CHECK(detail::schedule_weight(CommandKind::barrier) == 0);
}

TEST_CASE("plan.empty" * doctest::timeout(10)) {
  CommandBuffer cmd("empty");
  auto plan = plan_of(cmd);
  CHECK(plan->size() == 0);
  CHECK(plan->dag->critical_path.empty());
  CHECK(detail::flatten(*plan).tasks.empty());
}

TEST_CASE("plan.chain.100k_without_recursion" * doctest::timeout(60)) {
  CommandBuffer cmd("chain");
  record(cmd, random_dag(DagShape::chain, 100000, 0));
  auto plan = plan_of(cmd);
  CHECK(plan->dag->level_count == 100000);
  CHECK(plan->dag->children.edges() == 99999);
  CHECK(plan->dag->critical_path.size() == 100000);
}

TEST_CASE("plan.fan.100k" * doctest::timeout(60)) {
  CommandBuffer cmd("fan");
  const Dag dag = random_dag(DagShape::fan, 100000, 0);
  record(cmd, dag);
  cmd.host([] {});  // plus one isolated command
  auto plan = plan_of(cmd);
  CHECK(plan->dag->level_count == 3);
  CHECK(plan->dag->children.edges() == dag.edges.size());
  CHECK(plan->dag->children[0].size() == 99998);
}

TEST_CASE("plan.flatten.nested_between_joins" * doctest::timeout(10)) {
  CommandBuffer inner("inner");
  auto x = inner.host([] {});
  inner.host([] {});  // two sources, two sinks
  inner.host([] {}).after(x);
  CommandBuffer outer("outer");
  auto a = outer.host([] {});
  auto n = outer.execute(inner).after(a);
  auto z = outer.host([] {}).after(n);
  auto plan = plan_of(outer);
  REQUIRE(plan->bodies_of(n.index()).size() == 1);
  const auto flat = detail::flatten(*plan);
  CHECK(flat.tasks.size() == 2 + 3 + 2);  // a, z, three inner, entry and exit joins
  CHECK(flat.sources.size() == 1);
  // a reaches every inner task before z: walk the flat order.
  std::vector<std::uint32_t> pos(flat.tasks.size());
  for (std::uint32_t t = 0; t < flat.tasks.size(); ++t) pos[t] = t;
  for (std::uint32_t t = 0; t < flat.tasks.size(); ++t) {
    for (std::uint32_t k : flat.children[t]) CHECK(pos[t] < pos[k]);
    if (flat.tasks[t].plan != plan.get()) {
      CHECK(flat.parents[t].size() == 1);  // hangs off the entry join or an inner parent
    }
  }
  CHECK(flat.parents[flat.root_task[z.index()]].size() == 1);
  CHECK(flat.tasks[flat.root_task[n.index()]].is_join());
}
