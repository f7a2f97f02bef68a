// Lane schedules of the streams backend, checked without a GPU: every edge must be implied by
// lane order, event waits and the fork; known shapes use the expected streams and events.
#include "plan/lanes.hpp"
#include "plan/flat_plan.hpp"
#include "plan/plan.hpp"
#include "support/random_dag.hpp"

#include <cmdgraph/cmdgraph.hpp>

#include <doctest/doctest.h>

#include <vector>

using namespace cmdgraph;
using namespace cmdgraph::testing;
using detail::LaneSchedule;

namespace {

struct Scheduled {
  std::shared_ptr<const detail::Plan> plan;
  detail::FlatPlan flat;
  LaneSchedule schedule;
};

Scheduled schedule(const Dag& dag, unsigned lanes) {
  CommandBuffer cmd("lanes");
  std::vector<Command> c;
  for (std::size_t v = 0; v < dag.size; ++v) c.push_back(cmd.host([] {}));
  for (const auto& [p, k] : dag.edges) c[k].after(c[p]);
  Scheduled s;
  s.plan = detail::build_plan(*detail::recording_of(cmd));
  s.flat = detail::flatten(*s.plan);
  s.schedule = detail::assign_lanes(s.flat, lanes);
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
    const Scheduled s = schedule(dag, lanes);
    CHECK(s.schedule.lanes <= lanes);
    const std::string problem = unimplied_edge(s);
    CHECK_MESSAGE(problem.empty(), problem);
    CHECK(s.schedule.wait_count() - s.schedule.joins.size() <=
          s.schedule.cross_edges + s.schedule.lanes);  // waits: at most one per cross edge, plus forks
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
