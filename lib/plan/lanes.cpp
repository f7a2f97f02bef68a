// assign_lanes: list scheduling by estimated start time and critical path, then vector clocks
// to drop every wait that earlier waits already imply.
#include "plan/lanes.hpp"

#include <algorithm>
#include <numeric>

namespace cmdgraph::detail {
namespace {

std::uint64_t weight_of(const FlatTask& t) {
  return t.is_join() ? 0 : schedule_weight(t.plan->kind(t.command));
}

constexpr std::uint32_t no_lane = ~0u;

}  // namespace

std::uint32_t LaneSchedule::event_count() const {
  std::uint32_t n = 0;
  for (auto r : records) n += r;
  const bool forks = std::any_of(fork_wait.begin(), fork_wait.end(), [](auto f) { return f; });
  return n + (forks ? 1 : 0);
}

std::uint32_t LaneSchedule::wait_count() const {
  std::uint32_t n = static_cast<std::uint32_t>(joins.size());
  for (const auto& w : waits) n += static_cast<std::uint32_t>(w.size());
  for (auto f : fork_wait) n += f;
  return n;
}

LaneSchedule assign_lanes(const FlatPlan& flat, unsigned max_lanes) {
  const std::size_t n = flat.tasks.size();
  max_lanes = std::max(1u, max_lanes);
  LaneSchedule s;
  s.lane.assign(n, no_lane);
  s.waits.assign(n, {});
  s.fork_wait.assign(n, 0);
  s.records.assign(n, 0);

  // Estimated start (longest weighted path from a source) and bottom (to a sink).
  std::vector<std::uint64_t> weight(n), start(n, 0), bottom(n, 0);
  for (std::size_t t = 0; t < n; ++t) weight[t] = weight_of(flat.tasks[t]);
  for (std::uint32_t t = 0; t < n; ++t) {
    for (std::uint32_t p : flat.parents[t]) start[t] = std::max(start[t], start[p] + weight[p]);
  }
  for (std::size_t i = n; i-- > 0;) {
    for (std::uint32_t k : flat.children[i]) bottom[i] = std::max(bottom[i], bottom[k]);
    bottom[i] += weight[i];
  }
  // Enqueue order: by estimated start, heaviest remaining path first. Still topological:
  // a child starts no earlier than its parent, and at a tie the parent's path is heavier
  // or equal (it contains the child's); the flat order breaks remaining ties.
  s.order.resize(n);
  std::iota(s.order.begin(), s.order.end(), 0u);
  std::stable_sort(s.order.begin(), s.order.end(), [&](std::uint32_t a, std::uint32_t b) {
    if (start[a] != start[b]) return start[a] < start[b];
    return bottom[a] > bottom[b];
  });

  std::vector<std::uint32_t> tail;        // lane -> its last task so far
  std::vector<std::uint64_t> free_at;     // lane -> estimated time it becomes free
  std::vector<std::uint64_t> finish(n, 0);
  tail.push_back(no_lane);
  free_at.push_back(0);
  for (std::uint32_t t : s.order) {
    std::uint64_t ready = 0;
    for (std::uint32_t p : flat.parents[t]) ready = std::max(ready, finish[p]);
    // Continue the lane of the parent t waits for longest, if that parent ends its lane.
    std::uint32_t chosen = no_lane, latest = no_lane;
    for (std::uint32_t p : flat.parents[t]) {
      if (latest == no_lane || finish[p] > finish[latest] ||
          (finish[p] == finish[latest] && bottom[p] > bottom[latest])) {
        latest = p;
      }
    }
    if (latest != no_lane && tail[s.lane[latest]] == latest) chosen = s.lane[latest];
    if (chosen == no_lane && flat.parents[t].empty() && tail[0] == no_lane) chosen = 0;
    if (chosen == no_lane && weight[t] == 0) {
      chosen = latest != no_lane ? s.lane[latest] : 0;  // free tasks never open lanes
    }
    if (chosen == no_lane) {
      // A lane already idle when t is ready costs no more waits than a new one: reuse the one
      // that became idle last, keeping streams few.
      for (std::uint32_t l = 0; l < tail.size(); ++l) {
        if (free_at[l] <= ready && (chosen == no_lane || free_at[l] > free_at[chosen])) chosen = l;
      }
    }
    if (chosen == no_lane && tail.size() < max_lanes) {
      chosen = static_cast<std::uint32_t>(tail.size());
      tail.push_back(no_lane);
      free_at.push_back(0);
    }
    if (chosen == no_lane) {
      chosen = static_cast<std::uint32_t>(
          std::min_element(free_at.begin(), free_at.end()) - free_at.begin());
    }
    s.lane[t] = chosen;
    tail[chosen] = t;
    finish[t] = std::max(ready, free_at[chosen]) + weight[t];
    free_at[chosen] = finish[t];
  }
  s.lanes = static_cast<std::uint32_t>(tail.size());

  // Vector clocks: clock[L][K] = the last position on lane K that lane L is known to follow.
  // Position -1 on lane 0 is the fork (the queue's work before the launch); -2 is nothing.
  const std::size_t lanes = s.lanes;
  std::vector<std::vector<std::int64_t>> clock(lanes, std::vector<std::int64_t>(lanes, -2));
  clock[0][0] = -1;
  std::vector<std::int64_t> position(n, 0), next_position(lanes, 0);
  std::vector<std::vector<std::int64_t>> seen(n);  // lane clock just after each task
  std::vector<std::uint32_t> rank(n);
  for (std::uint32_t i = 0; i < n; ++i) rank[s.order[i]] = i;
  std::vector<std::uint32_t> parents;
  for (std::uint32_t t : s.order) {
    const std::uint32_t L = s.lane[t];
    // Latest parents first: waiting on them often implies the earlier ones.
    parents.assign(flat.parents[t].begin(), flat.parents[t].end());
    std::sort(parents.begin(), parents.end(),
              [&](std::uint32_t a, std::uint32_t b) { return rank[a] > rank[b]; });
    for (std::uint32_t p : parents) {
      const std::uint32_t K = s.lane[p];
      if (K == L) continue;
      ++s.cross_edges;
      if (clock[L][K] >= position[p]) continue;  // already implied
      s.waits[t].push_back(p);
      s.records[p] = 1;
      for (std::size_t k = 0; k < lanes; ++k) clock[L][k] = std::max(clock[L][k], seen[p][k]);
    }
    if (clock[L][0] < -1) {
      s.fork_wait[t] = 1;
      clock[L][0] = -1;
    }
    position[t] = next_position[L]++;
    clock[L][L] = position[t];
    seen[t] = clock[L];
  }
  for (std::uint32_t L = 1; L < lanes; ++L) {
    if (tail[L] == no_lane || clock[0][L] >= position[tail[L]]) continue;
    s.joins.push_back(tail[L]);
    s.records[tail[L]] = 1;
    for (std::size_t k = 0; k < lanes; ++k) clock[0][k] = std::max(clock[0][k], seen[tail[L]][k]);
  }
  return s;
}

}  // namespace cmdgraph::detail
