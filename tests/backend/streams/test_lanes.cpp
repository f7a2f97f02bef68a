// Lane schedules of the streams backend, checked without a GPU: every edge must be implied by
// lane order, event waits and the fork; known shapes use the expected streams and events.
#include "lane_schedules.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <numeric>
#include <random>
#include <set>
#include <vector>

using namespace cmdgraph;
using namespace cmdgraph::testing;
using detail::LaneOrder;
using detail::LaneSchedule;

TEST_CASE("lanes.every_edge_implied_on_random_dags" * doctest::timeout(120)) {
  const DagShape shapes[] = {DagShape::chain, DagShape::fan, DagShape::layered, DagShape::random,
                             DagShape::shuffled};
  for (std::uint32_t i = 0; i < 150; ++i) {
    const Dag dag = random_dag(shapes[i % 5], 1 + (i * 37) % 600, 300 + i);
    const unsigned lanes = 1 + i % 8;
    CAPTURE(i);
    CAPTURE(lanes);
    Scheduled s = recorded(dag);
    for (const auto order : {LaneOrder::by_start, LaneOrder::as_recorded}) {
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
    const auto order = i % 2 ? LaneOrder::as_recorded : LaneOrder::by_start;
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


TEST_CASE("lanes.fewer_waits_never_longer" * doctest::timeout(120)) {
  // assign_lanes keeps the recorded order's schedule only for fewer waits and never where the
  // model says a launch takes longer than with the critical path first: with costs (the longer
  // of the device's run and the host's enqueue) not at all, counting tasks as units by at most
  // 1/32 (a unit at least).
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
      Scheduled s = recorded(dag, costed ? costs : std::vector<std::chrono::nanoseconds>());
      const LaneSchedule by_start = detail::assign_lanes_in(LaneOrder::by_start, s.flat, lanes);
      s.schedule = detail::assign_lanes(s.flat, lanes);
      CAPTURE(i);
      CAPTURE(costed);
      CHECK(s.schedule.by_costs == costed);
      CHECK(s.schedule.wait_count() <= by_start.wait_count());
      const std::uint64_t slack = costed ? 0 : (by_start.makespan + 31) / 32;
      CHECK(s.schedule.launch_time() <= by_start.launch_time() + slack);
      recorded_kept += s.schedule.enqueued == LaneOrder::as_recorded;
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

TEST_CASE("lanes.recording_order_through_executed_buffers" * doctest::timeout(30)) {
  // An executed buffer's tasks are enqueued between its entry and exit, in its own recording
  // order, each once; every edge stays implied.
  CommandBuffer inner("inner");
  Command a = inner.host([] {});
  Command b = inner.host([] {});
  inner.host([] {}).after(b);
  a.after(b);  // recorded before its parent: the order follows the edge
  CommandBuffer cmd("outer");
  Command first = cmd.host([] {});
  Command nested = cmd.execute(inner);
  cmd.host([] {}).after(nested);
  cmd.host([] {}).after(first);
  nested.after(first);
  Scheduled s;
  s.plan = detail::build_plan(*detail::recording_of(cmd));
  s.flat = detail::flatten(*s.plan);
  s.schedule = detail::assign_lanes_in(LaneOrder::as_recorded, s.flat, 2);
  REQUIRE(s.flat.nested.size() == 1);
  std::vector<std::uint32_t> sorted = s.schedule.order;
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::uint32_t> every(s.flat.tasks.size());
  std::iota(every.begin(), every.end(), 0u);
  CHECK(sorted == every);
  const std::string problem = unimplied_edge(s);
  CHECK_MESSAGE(problem.empty(), problem);
  const auto at = [&](std::uint32_t task) {
    return std::find(s.schedule.order.begin(), s.schedule.order.end(), task) -
           s.schedule.order.begin();
  };
  const detail::NestedSpan& span = s.flat.nested.front();
  for (std::uint32_t t = span.entry + 1; t < span.exit; ++t) {
    CHECK(at(span.entry) < at(t));
    CHECK(at(t) < at(span.exit));
  }
}
