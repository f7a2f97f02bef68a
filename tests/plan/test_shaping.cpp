// Graph shaping (CompileOptions::shape) against brute force: the shaped graph implies every
// edge of the plan, has no cycle and no redundant edge, its order is topological; with costs,
// automatic shaping starts no command later (earliest starts over the shaped graph against
// the plan's) on as many lanes as the most commands that overlap; uniform never lengthens the
// schedule counted in units; automatic without every cost leaves the plan's edges.
#include "plan/plan.hpp"
#include "plan/shaping.hpp"
#include "record/recording.hpp"
#include "support/random_dag.hpp"

#include <cmdgraph/cmdgraph.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <random>
#include <vector>

using namespace cmdgraph;
using namespace cmdgraph::testing;
using namespace std::chrono_literals;
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

// A random cost: nothing, less than a node's launch, a few microseconds, tens of them, or any.
std::chrono::nanoseconds random_cost(std::mt19937& rng) {
  switch (rng() % 5) {
    case 0: return 0ns;
    case 1: return std::chrono::nanoseconds(rng() % 500);
    case 2: return 2us;
    case 3: return 20us;
    default: return std::chrono::nanoseconds(rng() % 50'000);
  }
}

// Each vertex a kernel with a random cost, but one in 7 an event record (takes no time) and
// one in 11 a kernel with a priority of its own (takes no lane); `uncosted` kernels (of the
// first lane-taking ones) get no cost.
std::shared_ptr<const Plan> costed_plan_of(const Dag& dag, std::uint32_t seed,
                                           std::size_t uncosted = 0) {
  std::mt19937 rng(seed);
  Event event(Device::host());
  CommandBuffer cmd("costed");
  std::vector<Command> c;
  for (std::size_t v = 0; v < dag.size; ++v) {
    if (v % 7 == 6) {
      c.push_back(cmd.record(event).cost(random_cost(rng)));
      continue;
    }
    c.push_back(cmd.launch(&kernel_stub, LaunchConfig{{1}, {1}}, static_cast<int>(v)));
    if (v % 11 == 10) {
      c.back().priority(Priority::high).cost(random_cost(rng));
    } else if (uncosted > 0) {
      --uncosted;
    } else {
      c.back().cost(random_cost(rng));
    }
  }
  for (const auto& [p, k] : dag.edges) c[k].after(c[p]);
  return detail::build_plan(*detail::recording_of(cmd));
}

// What shaping counts each command's time as, by its documentation: its cost plus a launch
// unit, for commands that take time; 0 for barriers and events.
std::vector<std::uint64_t> modelled_times(const Plan& plan) {
  std::vector<std::uint64_t> time(plan.size(), 0);
  for (std::uint32_t c = 0; c < plan.size(); ++c) {
    if (detail::schedule_weight(plan.kind(c)) == 0) continue;
    const auto cost = plan.command(c).hints.cost.value_or(0ns);
    time[c] = static_cast<std::uint64_t>((cost + detail::shaping_launch_unit).count());
  }
  return time;
}

bool takes_lane(const Plan& plan, std::uint32_t c) {
  return detail::schedule_weight(plan.kind(c)) > 0 && !plan.command(c).hints.priority;
}

// The heaviest path from `c` to a sink under the plan's edges, `c`'s own time included
// (`tail` memoizes, 0 for not yet known).
std::uint64_t tail_of(const Plan& plan, const std::vector<std::uint64_t>& time, std::uint32_t c,
                      std::vector<std::uint64_t>& tail) {
  if (tail[c] > 0) return tail[c];
  std::uint64_t below = 0;
  for (std::uint32_t k : plan.dag->children[c]) {
    below = std::max(below, tail_of(plan, time, k, tail));
  }
  return tail[c] = time[c] + below;
}

// The run without lanes as shape_graph documents its model, by brute force: again and again
// the command whose parents all started and finished earliest, the heavier path below first,
// then recording order; one that takes time starts at least a dispatch gap after the last.
std::vector<std::uint64_t> modelled_starts(const Plan& plan, const std::vector<std::uint64_t>& time) {
  const std::size_t n = plan.size();
  std::vector<std::uint64_t> tail(n, 0), start(n, 0);
  for (std::uint32_t c = 0; c < n; ++c) tail_of(plan, time, c, tail);
  std::vector<bool> placed(n, false);
  std::uint64_t next_dispatch = 0;
  for (std::size_t step = 0; step < n; ++step) {
    std::uint32_t best = ~0u;
    std::uint64_t best_ready = 0;
    for (std::uint32_t c = 0; c < n; ++c) {
      if (placed[c]) continue;
      bool free = true;
      std::uint64_t ready = 0;
      for (std::uint32_t p : plan.dag->parents[c]) {
        free = free && placed[p];
        ready = std::max(ready, start[p] + time[p]);
      }
      if (!free) continue;
      if (best == ~0u || ready < best_ready || (ready == best_ready && tail[c] > tail[best])) {
        best = c;
        best_ready = ready;
      }
    }
    start[best] = best_ready;
    if (time[best] > 0) {
      start[best] = std::max(start[best], next_dispatch);
      next_dispatch = start[best] + detail::shaping_dispatch_gap.count();
    }
    placed[best] = true;
  }
  return start;
}

// The most lane-taking commands running at once, [start, start + time) each.
std::size_t most_overlapping(const Plan& plan, const std::vector<std::uint64_t>& start,
                             const std::vector<std::uint64_t>& time) {
  std::size_t most = 0;
  for (std::uint32_t c = 0; c < plan.size(); ++c) {
    if (!takes_lane(plan, c)) continue;
    std::size_t running = 0;
    for (std::uint32_t d = 0; d < plan.size(); ++d) {
      running += takes_lane(plan, d) && start[d] <= start[c] && start[c] < start[d] + time[d];
    }
    most = std::max(most, running);
  }
  return most;
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
    for (std::uint32_t p : plan.dag->parents[c]) CHECK(reach[p][c]);  // every plan edge implied
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
      const auto ps = plan.dag->parents[c];
      from_plan += std::find(ps.begin(), ps.end(), p) != ps.end();
    }
  }
  CHECK(s.edges_added == edges - from_plan);
  CHECK(s.edges_dropped == plan.dag->children.edges() - from_plan);
}

}  // namespace

TEST_CASE("plan.shaping.implies_every_edge_with_no_cycle_and_nothing_redundant" *
          doctest::timeout(120)) {
  const DagShape shapes[] = {DagShape::layered, DagShape::random, DagShape::shuffled,
                             DagShape::fan, DagShape::chain};
  std::size_t shaped = 0, by_cost = 0;
  for (std::uint32_t seed = 0; seed < 60; ++seed) {
    const Dag dag = random_dag(shapes[seed % 5], 2 + seed * 3, seed);
    CAPTURE(seed);
    const auto plan = plan_of(dag);
    const auto costed = costed_plan_of(dag, seed);
    for (const GraphShape shape : {GraphShape::automatic(), GraphShape::uniform(),
                                   GraphShape::lanes(1), GraphShape::lanes(2),
                                   GraphShape::lanes(5)}) {
      for (const Plan* p : {plan.get(), costed.get()}) {
        const GraphShaping s = detail::shape_graph(*p, shape);
        CAPTURE(s.reason);
        if (!s.shaped()) continue;
        ++shaped;
        by_cost += p == costed.get();
        check_shaped(*p, s);
      }
    }
  }
  CHECK(shaped > 250);
  CHECK(by_cost > 120);
}

TEST_CASE("plan.shaping.costs_delay_no_command_on_the_most_overlapping_lanes" *
          doctest::timeout(120)) {
  const DagShape shapes[] = {DagShape::layered, DagShape::random, DagShape::shuffled,
                             DagShape::fan};
  CHECK(detail::shaping_launch_unit == 500ns);  // as the docs say: what a graph node adds
  CHECK(detail::shaping_dispatch_gap == 150ns);  // and how often the device starts one
  std::size_t shaped = 0, added = 0;
  for (std::uint32_t seed = 0; seed < 80; ++seed) {
    const Dag dag = random_dag(shapes[seed % 4], 10 + seed * 4, 300 + seed);
    CAPTURE(seed);
    const auto plan = costed_plan_of(dag, seed);
    const GraphShaping s = detail::shape_graph(*plan, GraphShape::automatic());
    CAPTURE(s.reason);
    if (!s.shaped()) {
      CHECK(s.reason.find("nothing to add") != std::string::npos);
      continue;
    }
    ++shaped;
    added += s.edges_added;
    const std::vector<std::uint64_t> time = modelled_times(*plan);
    const auto start = modelled_starts(*plan, time);
    // The run modelled without lanes is still allowed by the shaped graph: no command has to
    // start later.
    for (std::uint32_t c = 0; c < plan->size(); ++c) {
      for (std::uint32_t p : s.parents[c]) {
        CAPTURE(c);
        CAPTURE(p);
        CHECK(start[p] + time[p] <= start[c]);
      }
    }
    CHECK(s.lanes == most_overlapping(*plan, start, time));
    CHECK(s.reason.find("automatic: " + std::to_string(s.lanes) + " lanes") == 0);
  }
  CHECK(shaped > 40);
  CHECK(added > 0);
}

TEST_CASE("plan.shaping.automatic_without_every_cost_keeps_the_plans_edges" *
          doctest::timeout(30)) {
  CHECK(CompileOptions{}.shape == GraphShape::automatic());
  const Dag dag = random_dag(DagShape::random, 60, 5);
  for (const std::size_t uncosted : {std::size_t{1}, std::size_t{17}}) {
    const auto plan = costed_plan_of(dag, 5, uncosted);
    std::size_t taking = 0;
    for (std::uint32_t c = 0; c < plan->size(); ++c) taking += takes_lane(*plan, c);
    const GraphShaping s = detail::shape_graph(*plan, GraphShape::automatic());
    CHECK_FALSE(s.shaped());
    CHECK(s.reason == "automatic: " + std::to_string(uncosted) + " of " +
                          std::to_string(taking) +
                          " commands that take a lane have no cost (cost(), costs_from()), "
                          "so the plan's edges stand");
    // The same commands with every cost given are shaped; uniform() needs none.
    CHECK(detail::shape_graph(*costed_plan_of(dag, 5), GraphShape::automatic()).shaped());
    CHECK(detail::shape_graph(*plan, GraphShape::uniform()).shaped());
    // lanes(n) then counts units.
    const GraphShaping lanes = detail::shape_graph(*plan, GraphShape::lanes(3));
    CHECK(lanes.reason.find("lanes(3), each command one unit: ") == 0);
  }
  const GraphShaping by_cost =
      detail::shape_graph(*costed_plan_of(dag, 5), GraphShape::lanes(3));
  CHECK(by_cost.reason.find("lanes(3), by costs: ") == 0);
  // Without any cost at all, as a user who gives none: the plan's edges.
  const auto bare = plan_of(dag);
  const GraphShaping s = detail::shape_graph(*bare, GraphShape::automatic());
  CHECK_FALSE(s.shaped());
  CHECK(s.reason == "automatic: 60 of 60 commands that take a lane have no cost (cost(), "
                    "costs_from()), so the plan's edges stand");
}

// Each vertex a kernel with cost `costs[v]`, when it has one.
std::shared_ptr<const Plan> plan_with_costs(
    const Dag& dag, const std::vector<std::optional<std::chrono::nanoseconds>>& costs) {
  CommandBuffer cmd("measured");
  std::vector<Command> c;
  for (std::size_t v = 0; v < dag.size; ++v) {
    c.push_back(cmd.launch(&kernel_stub, LaunchConfig{{1}, {1}}, static_cast<int>(v)));
    if (costs[v]) c.back().cost(*costs[v]);
  }
  for (const auto& [p, k] : dag.edges) c[k].after(c[p]);
  return detail::build_plan(*detail::recording_of(cmd));
}

TEST_CASE("plan.shaping.measured_durations_stand_in_for_missing_costs" * doctest::timeout(60)) {
  std::size_t shaped = 0;
  for (std::uint32_t seed = 0; seed < 30; ++seed) {
    CAPTURE(seed);
    const Dag dag = random_dag(DagShape::random, 40 + seed * 5, 900 + seed);
    std::mt19937 rng(seed);
    // Some commands have a cost of their own; every one has a measured duration, which for
    // those with a cost is far off (their own must win).
    std::vector<std::optional<std::chrono::nanoseconds>> own(dag.size), whole(dag.size);
    std::vector<std::chrono::nanoseconds> measured(dag.size);
    for (std::size_t v = 0; v < dag.size; ++v) {
      measured[v] = random_cost(rng);
      if (rng() % 3 == 0) own[v] = random_cost(rng);
      whole[v] = own[v] ? *own[v] : measured[v];
    }
    if (std::all_of(own.begin(), own.end(), [](const auto& c) { return c.has_value(); })) {
      own[0].reset();
      whole[0] = measured[0];
    }
    for (std::size_t v = 0; v < dag.size; ++v) {
      if (own[v]) measured[v] = 999us;
    }
    const auto partly = plan_with_costs(dag, own);
    const GraphShaping without = detail::shape_graph(*partly, GraphShape::automatic());
    CHECK_FALSE(without.shaped());
    CHECK(without.wants_costs);
    const GraphShaping learned = detail::shape_graph(*partly, GraphShape::automatic(), measured);
    const GraphShaping given = detail::shape_graph(*plan_with_costs(dag, whole),
                                                   GraphShape::automatic());
    CHECK_FALSE(learned.wants_costs);
    CHECK(learned.reason == given.reason);
    REQUIRE(learned.shaped() == given.shaped());
    if (!learned.shaped()) continue;
    ++shaped;
    check_shaped(*partly, learned);
    CHECK(learned.lanes == given.lanes);
    CHECK(learned.order == given.order);
    for (std::uint32_t c = 0; c < partly->size(); ++c) {
      const auto a = learned.parents[c];
      const auto b = given.parents[c];
      CHECK(std::vector<std::uint32_t>(a.begin(), a.end()) ==
            std::vector<std::uint32_t>(b.begin(), b.end()));
    }
  }
  CHECK(shaped > 10);
  // Only automatic() wants costs: the others shape without them or not at all.
  const auto bare = plan_of(random_dag(DagShape::random, 60, 5));
  CHECK(detail::shape_graph(*bare, GraphShape::automatic()).wants_costs);
  CHECK_FALSE(detail::shape_graph(*bare, GraphShape::uniform()).wants_costs);
  CHECK_FALSE(detail::shape_graph(*bare, GraphShape::off()).wants_costs);
  CHECK_FALSE(detail::shape_graph(*bare, GraphShape::lanes(4)).wants_costs);
  // Chains have nothing to add, costs or none.
  CHECK_FALSE(detail::shape_graph(*plan_of(random_dag(DagShape::chain, 40, 5)),
                                  GraphShape::automatic()).wants_costs);
}

TEST_CASE("plan.shaping.uniform_never_lengthens_the_schedule" * doctest::timeout(120)) {
  std::size_t added = 0;
  for (std::uint32_t seed = 0; seed < 40; ++seed) {
    const Dag dag = random_dag(seed % 2 ? DagShape::random : DagShape::layered, 20 + seed * 10, seed);
    CAPTURE(seed);
    const auto plan = plan_of(dag);
    const GraphShaping s = detail::shape_graph(*plan, GraphShape::uniform());
    CAPTURE(s.reason);
    if (!s.shaped()) continue;
    added += s.edges_added;
    CHECK(longest_chain(s.parents, s.order) == longest_chain(plan->dag->parents, plan->dag->order));
    CHECK(s.reason.find("uniform: " + std::to_string(s.lanes) + " lanes (the widest level") == 0);
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
  // Unshaped with nothing to add, but automatic() without costs on anything but chains says
  // that it had none. (With costs, fans and fork-joins wider than the device starts at once
  // do get lanes: plan.shaping.costs_delay_no_command_on_the_most_overlapping_lanes.)
  auto check_alone = [](const Plan& plan, GraphShape mode, bool chains) {
    const GraphShaping s = detail::shape_graph(plan, mode);
    CAPTURE(s.reason);
    CHECK_FALSE(s.shaped());
    const bool uncosted = !plan.command(0).hints.cost;
    const bool said = mode.is_automatic() && uncosted && !chains
                          ? s.reason.find("have no cost") != std::string::npos
                          : s.reason.find("nothing to add") != std::string::npos;
    CHECK(said);
  };
  for (const DagShape shape : {DagShape::chain, DagShape::fan}) {
    const Dag dag = random_dag(shape, 64, 1);
    for (const GraphShape mode : {GraphShape::automatic(), GraphShape::uniform()}) {
      check_alone(*plan_of(dag), mode, shape == DagShape::chain);
      if (shape == DagShape::chain || mode.is_uniform()) {
        check_alone(*costed_plan_of(dag, 1), mode, shape == DagShape::chain);
      }
    }
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
  for (const GraphShape mode : {GraphShape::automatic(), GraphShape::uniform()}) {
    check_alone(*plan_of(fork_join), mode, false);
  }
  check_alone(*costed_plan_of(fork_join, 2), GraphShape::uniform(), false);

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
  for (const GraphShape shape : {GraphShape::uniform(), GraphShape::lanes(2)}) {
    const GraphShaping s = detail::shape_graph(*plan, shape);
    CAPTURE(s.reason);
    const auto& parents = s.shaped() ? s.parents : plan->dag->parents;
    CHECK(std::vector<std::uint32_t>(parents[probe1.index()].begin(),
                                     parents[probe1.index()].end()) ==
          std::vector<std::uint32_t>{hold.index()});
    CHECK(parents[probe0.index()].size() == 1);
  }
}
