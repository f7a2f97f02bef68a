// Lane schedules of small and random DAGs for the streams backend's lane tests: a DAG of host
// tasks planned and flattened, and what the GPU would guarantee of its schedule.
#pragma once

#include "plan/flat_plan.hpp"
#include "plan/lanes.hpp"
#include "plan/plan.hpp"
#include "support/random_dag.hpp"

#include <cmdgraph/cmdgraph.hpp>

#include <chrono>
#include <memory>
#include <random>
#include <set>
#include <span>
#include <string>
#include <vector>

namespace cmdgraph::testing {

struct Scheduled {
  std::shared_ptr<const detail::Plan> plan;
  detail::FlatPlan flat;
  detail::LaneSchedule schedule;
};

// The DAG as host tasks (with `costs`, when given, one per vertex), planned and flattened.
inline Scheduled recorded(const Dag& dag, std::span<const std::chrono::nanoseconds> costs = {}) {
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

inline Scheduled schedule(const Dag& dag, unsigned lanes,
                          std::span<const std::int32_t> classes = {}) {
  Scheduled s = recorded(dag);
  s.schedule = detail::assign_lanes(s.flat, lanes, classes);
  return s;
}

// What the GPU guarantees: a task follows the earlier tasks of its lane, the tasks it waits
// on (and what they follow), and, on lanes other than 0 after a fork wait, nothing else.
// Returns the first edge not implied, or an empty string.
inline std::string unimplied_edge(const Scheduled& s) {
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


// 1-3 parents among all earlier vertices (the benchmark's random DAGs).
inline Dag random_earlier(std::size_t n, std::uint32_t seed) {
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

}  // namespace cmdgraph::testing
