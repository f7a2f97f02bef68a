// Lane schedules of the streams backend, checked without a GPU: every edge must be implied by
// lane order, event waits and the fork; known shapes use the expected streams and events.
#include "plan/lanes.hpp"
#include "plan/flat_plan.hpp"
#include "plan/plan.hpp"
#include "support/random_dag.hpp"

#include <cmdgraph/cmdgraph.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <queue>
#include <random>
#include <set>
#include <span>
#include <vector>

using namespace cmdgraph;
using namespace cmdgraph::testing;
using detail::LaneSchedule;
using detail::LaneOrder;

namespace {

struct Scheduled {
  std::shared_ptr<const detail::Plan> plan;
  detail::FlatPlan flat;
  LaneSchedule schedule;
};

// The DAG as host tasks (with `costs`, when given, one per vertex), planned and flattened.
Scheduled recorded(const Dag& dag, std::span<const std::chrono::nanoseconds> costs = {}) {
  CommandBuffer cmd("lanes");
  std::vector<Command> c;
  for (std::size_t v = 0; v < dag.size; ++v) {
    c.push_back(cmd.host([] {}));
    if (!costs.empty()) c.back().cost(costs[v]);
  }
  for (const auto& [p, k] : dag.edges) c[k].after(c[p]);
  Scheduled s;
  s.plan = detail::build_plan(*detail::recording_of(cmd));
  s.flat = detail::flatten(*s.plan);
  return s;
}

Scheduled schedule(const Dag& dag, unsigned lanes, std::span<const std::int32_t> classes = {}) {
  Scheduled s = recorded(dag);
  s.schedule = detail::assign_lanes(s.flat, lanes, classes);
  return s;
}

// What the GPU guarantees: a task follows the earlier tasks of its lane, the tasks it waits
// on (and what they follow), and, on lanes other than 0 after a fork wait, nothing else.
// Returns the first edge not implied, or an empty string.
std::string unimplied_edge(const Scheduled& s) {
  const std::size_t n = s.flat.tasks.size();
  std::vector<std::vector<bool>> before(n, std::vector<bool>(n, false));
  std::vector<std::int64_t> last_on_lane(s.schedule.lanes, -1);
  for (std::uint32_t t : s.schedule.order) {
    auto absorb = [&](std::uint32_t p) {
      before[t][p] = true;
      for (std::size_t x = 0; x < n; ++x) if (before[p][x]) before[t][x] = true;
    };
    const std::uint32_t lane = s.schedule.lane[t];
    if (last_on_lane[lane] >= 0) absorb(static_cast<std::uint32_t>(last_on_lane[lane]));
    for (std::uint32_t p : s.schedule.waits[t]) absorb(p);
    last_on_lane[lane] = t;
  }
  for (std::uint32_t t = 0; t < n; ++t) {
    for (std::uint32_t k : s.flat.children[t]) {
      if (!before[k][t]) return std::to_string(t) + " -> " + std::to_string(k);
    }
  }
  // Every task on lanes other than 0 follows the fork (directly or through a wait).
  std::vector<bool> forked(s.schedule.lanes, false);
  forked[0] = true;
  std::vector<bool> after_fork(n, false);
  for (std::uint32_t t : s.schedule.order) {
    const std::uint32_t lane = s.schedule.lane[t];
    bool f = forked[lane] || s.schedule.fork_wait[t];
    for (std::uint32_t p : s.schedule.waits[t]) f = f || after_fork[p];
    if (!f) return "task " + std::to_string(t) + " does not follow the fork";
    after_fork[t] = true;
    forked[lane] = true;
  }
  // Lane 0 joins every other lane's last task.
  std::vector<bool> joined(n, false);
  for (std::uint32_t j : s.schedule.joins) joined[j] = true;
  for (std::uint32_t lane = 1; lane < s.schedule.lanes; ++lane) {
    if (last_on_lane[lane] < 0) continue;
    const auto tail = static_cast<std::uint32_t>(last_on_lane[lane]);
    bool covered = joined[tail];
    for (std::uint32_t j : s.schedule.joins) covered = covered || before[j][tail];
    if (!covered && last_on_lane[0] >= 0) covered = before[last_on_lane[0]][tail];
    if (!covered) return "lane " + std::to_string(lane) + " is never joined";
  }
  return {};
}

}  // namespace

TEST_CASE("lanes.every_edge_implied_on_random_dags" * doctest::timeout(120)) {
  const DagShape shapes[] = {DagShape::chain, DagShape::fan, DagShape::layered, DagShape::random,
                             DagShape::shuffled};
  for (std::uint32_t i = 0; i < 150; ++i) {
    const Dag dag = random_dag(shapes[i % 5], 1 + (i * 37) % 600, 300 + i);
    const unsigned lanes = 1 + i % 8;
    CAPTURE(i);
    CAPTURE(lanes);
    Scheduled s = recorded(dag);
    for (const auto order : {detail::LaneOrder::by_start, detail::LaneOrder::as_recorded}) {
      s.schedule = detail::assign_lanes_in(order, s.flat, lanes);
      CHECK(s.schedule.lanes <= lanes);
      const std::string problem = unimplied_edge(s);
      CHECK_MESSAGE(problem.empty(), problem);
      CHECK(s.schedule.wait_count() - s.schedule.joins.size() <=
            s.schedule.cross_edges + s.schedule.lanes);  // at most one per cross edge, plus forks
    }
  }
}

TEST_CASE("lanes.classes_never_share_a_lane" * doctest::timeout(120)) {
  // Kernels of different priorities get lanes of their own (streams of that priority); tasks
  // of class `any` go anywhere; every edge stays implied.
  namespace lc = detail::lane_class;
  const std::int32_t palette[] = {lc::any, lc::queue, -5, -2, 0};
  for (std::uint32_t i = 0; i < 120; ++i) {
    const Dag dag = random_dag(i % 2 ? DagShape::random : DagShape::layered, 2 + (i * 41) % 400,
                               900 + i);
    std::mt19937 rng(i);
    std::vector<std::int32_t> classes(dag.size);
    const std::size_t used = 1 + i % 5;  // how many of the palette this DAG draws from
    for (auto& c : classes) c = palette[rng() % used];
    const unsigned lanes = 1 + i % 6;
    CAPTURE(i);
    CAPTURE(lanes);
    const Scheduled s = schedule(dag, lanes, classes);  // host tasks: the flat tasks are the DAG's
    REQUIRE(s.flat.tasks.size() == dag.size);
    REQUIRE(s.schedule.lane_class.size() == s.schedule.lanes);
    CHECK(s.schedule.lane_class[0] == lc::queue);
    std::set<std::int32_t> explicit_classes;
    for (std::uint32_t t = 0; t < dag.size; ++t) {
      const std::int32_t lane_class = s.schedule.lane_class[s.schedule.lane[t]];
      if (classes[t] != lc::any) CHECK(lane_class == classes[t]);
      if (classes[t] != lc::any && classes[t] != lc::queue) explicit_classes.insert(classes[t]);
    }
    CHECK(s.schedule.lanes <= lanes + explicit_classes.size());
    const std::string problem = unimplied_edge(s);
    CHECK_MESSAGE(problem.empty(), problem);
  }
}

TEST_CASE("lanes.known_shapes" * doctest::timeout(30)) {
  SUBCASE("a chain stays on the queue's stream") {
    const Scheduled s = schedule(random_dag(DagShape::chain, 100, 0), 4);
    CHECK(s.schedule.lanes == 1);
    CHECK(s.schedule.event_count() == 0);
    CHECK(s.schedule.wait_count() == 0);
  }
  SUBCASE("k chains on k lanes: one fork, k-1 joins") {
    for (unsigned k = 2; k <= 6; ++k) {
      Dag dag;
      dag.size = 10 * k;
      for (std::uint32_t c = 0; c < k; ++c)
        for (std::uint32_t i = 1; i < 10; ++i) dag.edges.emplace_back(c * 10 + i - 1, c * 10 + i);
      const Scheduled s = schedule(dag, 8);
      CHECK(s.schedule.lanes == k);
      CHECK(s.schedule.event_count() == k);
      CHECK(s.schedule.wait_count() == 2 * (k - 1));
    }
  }
  SUBCASE("a ladder of diamonds needs two lanes") {
    Dag dag;
    dag.size = 80;
    for (std::uint32_t d = 0; d < 20; ++d) {
      const std::uint32_t a = 4 * d;
      if (d) dag.edges.emplace_back(a - 1, a);
      dag.edges.emplace_back(a, a + 1);
      dag.edges.emplace_back(a, a + 2);
      dag.edges.emplace_back(a + 1, a + 3);
      dag.edges.emplace_back(a + 2, a + 3);
    }
    const Scheduled s = schedule(dag, 4);
    CHECK(s.schedule.lanes == 2);
    CHECK(unimplied_edge(s).empty());
  }
}

TEST_CASE("lanes.waits_are_the_fewest_for_the_lanes_chosen" * doctest::timeout(120)) {
  // Brute force over every subset of the cross-lane edges of small DAGs: the smallest set of
  // waits that, with lane order, orders every edge, against the schedule's waits (the fork
  // and the joins aside), in either enqueue order.
  const DagShape shapes[] = {DagShape::layered, DagShape::random, DagShape::shuffled, DagShape::fan};
  int checked = 0;
  for (std::uint32_t i = 0; i < 800; ++i) {
    const Dag dag = random_dag(shapes[i / 2 % 4], 3 + i / 2 % 10, 900 + i / 2);
    Scheduled s = recorded(dag);
    const auto order = i % 2 ? detail::LaneOrder::as_recorded : detail::LaneOrder::by_start;
    s.schedule = detail::assign_lanes_in(order, s.flat, 2 + i / 2 % 3);
    const std::size_t n = s.flat.tasks.size();
    std::vector<std::pair<std::uint32_t, std::uint32_t>> cross;
    for (std::uint32_t t = 0; t < n; ++t) {
      for (std::uint32_t p : s.flat.parents[t]) {
        if (s.schedule.lane[p] != s.schedule.lane[t]) cross.emplace_back(p, t);
      }
    }
    if (cross.size() > 14) continue;
    const auto orders_every_edge = [&](std::uint32_t subset) {
      std::vector<std::uint32_t> before(n, 0);  // bit p: p happens before t
      std::vector<std::int64_t> last(s.schedule.lanes, -1);
      for (std::uint32_t t : s.schedule.order) {
        const std::uint32_t lane = s.schedule.lane[t];
        if (last[lane] >= 0) before[t] |= before[last[lane]] | (1u << last[lane]);
        for (std::size_t e = 0; e < cross.size(); ++e) {
          if ((subset >> e & 1u) && cross[e].second == t) {
            before[t] |= before[cross[e].first] | (1u << cross[e].first);
          }
        }
        last[lane] = t;
      }
      for (const auto& [p, t] : cross) {
        if (!(before[t] >> p & 1u)) return false;
      }
      return true;
    };
    std::size_t fewest = cross.size();
    for (std::uint32_t subset = 0; subset < (1u << cross.size()); ++subset) {
      const auto size = static_cast<std::size_t>(std::popcount(subset));
      if (size < fewest && orders_every_edge(subset)) fewest = size;
    }
    std::size_t waits = 0;
    for (const auto& w : s.schedule.waits) waits += w.size();
    CAPTURE(i);
    CHECK(waits == fewest);
    ++checked;
  }
  CHECK(checked > 600);
}

namespace {

// The flat plan's tasks (no executed buffers) in recording order where the edges allow: of
// the tasks whose parents are all placed, the one recorded first.
std::vector<std::uint32_t> recording_order(const detail::FlatPlan& flat) {
  const std::size_t n = flat.tasks.size();
  std::vector<std::size_t> left(n);
  using Entry = std::pair<std::uint32_t, std::uint32_t>;  // (command, task)
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> ready;
  for (std::uint32_t t = 0; t < n; ++t) {
    left[t] = flat.parents[t].size();
    if (left[t] == 0) ready.emplace(flat.tasks[t].command, t);
  }
  std::vector<std::uint32_t> order;
  while (!ready.empty()) {
    const std::uint32_t t = ready.top().second;
    ready.pop();
    order.push_back(t);
    for (std::uint32_t k : flat.children[t]) {
      if (--left[k] == 0) ready.emplace(flat.tasks[k].command, k);
    }
  }
  return order;
}

struct Hand {
  std::size_t waits = 0;
  std::uint64_t makespan = 0;  // in the lanes' model: one unit per task that takes time
};

// What a careful hand writes for a flat plan on `lanes` streams, in recording order: each
// task on its oldest parent's stream when that parent is the stream's last, else the next
// stream in turn; a wait on a parent's event unless the stream already waited on that stream
// at or after it; a fork for each stream it uses beyond the first and a join for each.
Hand careful_hand(const detail::FlatPlan& flat, unsigned lanes) {
  const std::size_t n = flat.tasks.size();
  std::vector<std::uint32_t> stream(n), tail(lanes, ~0u);
  std::vector<std::vector<std::int64_t>> waited(lanes, std::vector<std::int64_t>(lanes, -1));
  std::vector<std::int64_t> position(n), next(lanes, 0);
  std::vector<std::uint64_t> finish(n, 0), free_at(lanes, 0);
  std::vector<bool> used(lanes, false);
  Hand hand;
  std::size_t turn = 0;
  for (std::uint32_t v : recording_order(flat)) {
    std::vector<std::uint32_t> parents(flat.parents[v].begin(), flat.parents[v].end());
    std::sort(parents.begin(), parents.end(), [&](std::uint32_t a, std::uint32_t b) {
      return flat.tasks[a].command < flat.tasks[b].command;
    });
    const bool continues = !parents.empty() && tail[stream[parents[0]]] == parents[0];
    const std::uint32_t st = continues ? stream[parents[0]] : turn++ % lanes;
    if (!used[st] && st != 0) ++hand.waits;  // its fork
    used[st] = true;
    std::uint64_t ready = free_at[st];
    for (std::uint32_t p : parents) {
      ready = std::max(ready, finish[p]);
      if (stream[p] == st || waited[st][stream[p]] >= position[p]) continue;
      ++hand.waits;
      waited[st][stream[p]] = position[p];
    }
    stream[v] = st;
    tail[st] = v;
    position[v] = next[st]++;
    finish[v] = free_at[st] = ready + detail::schedule_weight(flat.tasks[v].plan->kind(flat.tasks[v].command));
    hand.makespan = std::max(hand.makespan, finish[v]);
  }
  for (unsigned l = 1; l < lanes; ++l) hand.waits += used[l];  // joins
  return hand;
}

// 1-3 parents among all earlier vertices (the benchmark's random DAGs).
Dag random_earlier(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  Dag dag;
  dag.size = n;
  for (std::uint32_t v = 1; v < n; ++v) {
    std::set<std::uint32_t> parents;
    for (std::uint32_t k = 1 + rng() % 3; k > 0; --k) parents.insert(rng() % v);
    for (std::uint32_t p : parents) dag.edges.emplace_back(p, v);
  }
  return dag;
}

Dag chains(std::uint32_t count, std::uint32_t length) {
  Dag dag;
  dag.size = count * length;
  for (std::uint32_t c = 0; c < count; ++c)
    for (std::uint32_t i = 1; i < length; ++i)
      dag.edges.emplace_back(c * length + i - 1, c * length + i);
  return dag;
}

// `blocks` of 1 -> width -> 1, each block's source after the previous block's sink.
Dag fork_joins(std::uint32_t width, std::uint32_t blocks) {
  Dag dag;
  dag.size = blocks * (width + 2);
  for (std::uint32_t b = 0; b < blocks; ++b) {
    const std::uint32_t source = b * (width + 2), sink = source + width + 1;
    if (b) dag.edges.emplace_back(source - 1, source);
    for (std::uint32_t i = 1; i <= width; ++i) {
      dag.edges.emplace_back(source, source + i);
      dag.edges.emplace_back(source + i, sink);
    }
  }
  return dag;
}

// `count` layers of `width` tasks with a barrier between layers.
Scheduled layers(std::uint32_t count, std::uint32_t width, unsigned lanes) {
  CommandBuffer cmd("layers");
  for (std::uint32_t l = 0; l < count; ++l) {
    for (std::uint32_t i = 0; i < width; ++i) cmd.host([] {});
    if (l + 1 < count) cmd.barrier();
  }
  Scheduled s;
  s.plan = detail::build_plan(*detail::recording_of(cmd));
  s.flat = detail::flatten(*s.plan);
  s.schedule = detail::assign_lanes(s.flat, lanes);
  return s;
}

}  // namespace

TEST_CASE("lanes.no_more_waits_than_a_careful_hand" * doctest::timeout(120)) {
  // On each shape and stream count the schedule needs no more waits (forks and joins counted
  // for both) than the careful hand on the same plan, unless the hand saves them by taking
  // longer: on as many lanes as a layer has tasks its round robin drifts off the layers,
  // running two tasks of a layer one after the other, where the schedule's waits are the
  // fewest that run each layer on all the lanes it can use (each barrier waits on the other
  // lanes, which then wait on it, 49 times; the forks and joins make the 50th).
  for (const unsigned lanes : {2u, 4u, 8u}) {
    std::vector<std::pair<std::string, Scheduled>> shapes;
    shapes.emplace_back("chain 1000", schedule(chains(1, 1000), lanes));
    shapes.emplace_back("8 x 125 chains", schedule(chains(8, 125), lanes));
    shapes.emplace_back("fork-join 1 -> 64 -> 1 x 16", schedule(fork_joins(64, 16), lanes));
    shapes.emplace_back("50 layers of 4, barriers", layers(50, 4, lanes));
    shapes.emplace_back("50 layers of 8, barriers", layers(50, 8, lanes));
    shapes.emplace_back("layered 1000", schedule(random_dag(DagShape::layered, 1000, 3), lanes));
    shapes.emplace_back("shuffled 1000", schedule(random_dag(DagShape::shuffled, 1000, 3), lanes));
    for (const std::size_t n : {200u, 1000u, 4000u}) {
      for (const std::uint32_t seed : {7u, 8u, 9u}) {
        shapes.emplace_back("random " + std::to_string(n) + " seed " + std::to_string(seed),
                            schedule(random_earlier(n, seed), lanes));
      }
    }
    for (const auto& [name, s] : shapes) {
      const Hand hand = careful_hand(s.flat, lanes);
      CAPTURE(name);
      CAPTURE(lanes);
      MESSAGE(name << " on " << lanes << " lanes: " << s.schedule.wait_count() << " waits in "
                   << s.schedule.makespan << ", the hand " << hand.waits << " in "
                   << hand.makespan);
      CHECK((s.schedule.wait_count() <= hand.waits || s.schedule.makespan < hand.makespan));
      for (const std::uint32_t width : {4u, 8u}) {
        if (name != "50 layers of " + std::to_string(width) + ", barriers") continue;
        CHECK(s.schedule.wait_count() == 50 * 2 * (std::min(width, lanes) - 1));
      }
      const std::string problem = unimplied_edge(s);
      CHECK_MESSAGE(problem.empty(), problem);
    }
  }
}

TEST_CASE("lanes.fewer_waits_never_longer" * doctest::timeout(120)) {
  // assign_lanes keeps the recorded order's schedule only for fewer waits and never where the
  // model says it takes longer than the critical path first: with costs not at all, counting
  // tasks as units by at most 1/32 (a unit at least).
  std::mt19937 rng(5);
  int recorded_kept = 0;
  for (std::uint32_t i = 0; i < 48; ++i) {
    const Dag dag = i % 3 == 0   ? random_dag(DagShape::shuffled, 300, i)
                    : i % 3 == 1 ? random_dag(DagShape::layered, 300, i)
                                 : random_earlier(300, i);
    const unsigned lanes = 2u << (i % 3);
    std::vector<std::chrono::nanoseconds> costs(dag.size);
    for (auto& c : costs) c = std::chrono::nanoseconds(1000 + rng() % 20000);
    for (const bool costed : {false, true}) {
      Scheduled s = recorded(dag, costed ? std::span(costs) : std::span<std::chrono::nanoseconds>());
      const LaneSchedule by_start = detail::assign_lanes_in(detail::LaneOrder::by_start, s.flat, lanes);
      s.schedule = detail::assign_lanes(s.flat, lanes);
      CAPTURE(i);
      CAPTURE(costed);
      CHECK(s.schedule.by_costs == costed);
      CHECK(s.schedule.wait_count() <= by_start.wait_count());
      const std::uint64_t slack = costed ? 0 : (by_start.makespan + 31) / 32;
      CHECK(s.schedule.makespan <= by_start.makespan + slack);
      recorded_kept += s.schedule.enqueued == detail::LaneOrder::as_recorded;
      CHECK(unimplied_edge(s).empty());
    }
  }
  CHECK(recorded_kept > 0);
}

TEST_CASE("lanes.costs_set_the_critical_path" * doctest::timeout(30)) {
  // Two chains from one source on one lane: the chain of heavy tasks goes
  // first, whichever was recorded first, once every task has a cost.
  Dag dag;
  dag.size = 7;
  for (const auto& [p, k] : {std::pair{0u, 1u}, {1u, 2u}, {2u, 3u}, {0u, 4u}, {4u, 5u}, {5u, 6u}}) {
    dag.edges.emplace_back(p, k);
  }
  for (const std::uint32_t heavy : {1u, 4u}) {  // the first task of the heavy chain
    std::vector<std::chrono::nanoseconds> costs(dag.size, std::chrono::microseconds(1));
    for (std::uint32_t k = heavy; k < heavy + 3; ++k) costs[k] = std::chrono::microseconds(50);
    Scheduled s = recorded(dag, costs);
    s.schedule = detail::assign_lanes(s.flat, 1);
    CHECK(s.schedule.by_costs);
    const auto& o = s.schedule.order;
    const auto at = [&](std::uint32_t command) {
      return std::find(o.begin(), o.end(), s.flat.root_task[command]) - o.begin();
    };
    CAPTURE(heavy);
    CHECK(at(heavy) < at(5 - heavy));
    CHECK(s.schedule.makespan == 3 * (50'000 + 500) + 4 * (1'000 + 500));
  }
}
