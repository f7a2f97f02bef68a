// assign_lanes: list scheduling by estimated start time and critical path, choosing among
// equally early lanes by the event waits each would need (vector clocks drop every wait that
// earlier waits already imply).
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

LaneSchedule assign_lanes(const FlatPlan& flat, unsigned max_lanes,
                          std::span<const std::int32_t> classes) {
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
  // Vector clocks: clock[L][K] = the last position on lane K that lane L is known to follow
  // (shorter than the lanes: the rest is -2). Position -1 on lane 0 is the fork (the queue's
  // work before the launch); -2 is nothing.
  std::vector<std::vector<std::int64_t>> clock;
  std::vector<std::int64_t> position(n, 0), next_position;
  std::vector<std::vector<std::int64_t>> seen(n);  // the lane's clock just after each task
  const auto known = [](const std::vector<std::int64_t>& c, std::size_t k) {
    return k < c.size() ? c[k] : std::int64_t{-2};
  };
  const auto class_of = [&](std::uint32_t t) {
    return classes.empty() ? lane_class::queue : classes[t];
  };
  const auto fits = [&](std::uint32_t l, std::uint32_t t) {
    return class_of(t) == lane_class::any || s.lane_class[l] == class_of(t);
  };
  const auto open_lane = [&](std::int32_t cls) {
    tail.push_back(no_lane);
    free_at.push_back(0);
    clock.emplace_back();
    next_position.push_back(0);
    s.lane_class.push_back(cls == lane_class::any ? lane_class::queue : cls);
  };
  open_lane(lane_class::queue);
  clock[0] = {-1};
  std::vector<std::uint32_t> rank(n);
  for (std::uint32_t i = 0; i < n; ++i) rank[s.order[i]] = i;

  // The waits t needs on lane L: its parents on other lanes, latest first, less those L
  // already follows through earlier waits and what they followed. The latest parent not
  // followed can only be followed by waiting on it (nothing enqueued before it knows it), so
  // each wait is forced and the set is the smallest for this lane and order; `clock_after`
  // gets L's clock once it has waited.
  std::vector<std::uint32_t> parents, waits;
  std::vector<std::int64_t> after;
  const auto waits_on = [&](std::uint32_t L, std::vector<std::uint32_t>& out,
                            std::vector<std::int64_t>& clock_after) {
    out.clear();
    clock_after = clock[L];
    for (std::uint32_t p : parents) {
      const std::uint32_t K = s.lane[p];
      if (K == L || known(clock_after, K) >= position[p]) continue;
      out.push_back(p);
      if (clock_after.size() < seen[p].size()) clock_after.resize(seen[p].size(), -2);
      for (std::size_t k = 0; k < seen[p].size(); ++k) {
        clock_after[k] = std::max(clock_after[k], seen[p][k]);
      }
    }
  };

  for (std::uint32_t t : s.order) {
    parents.assign(flat.parents[t].begin(), flat.parents[t].end());
    std::sort(parents.begin(), parents.end(),
              [&](std::uint32_t a, std::uint32_t b) { return rank[a] > rank[b]; });
    std::uint64_t ready = 0;
    for (std::uint32_t p : parents) ready = std::max(ready, finish[p]);
    // The parent t waits for longest; its lane continues with t if that parent ends it.
    std::uint32_t chosen = no_lane, latest = no_lane;
    for (std::uint32_t p : parents) {
      if (latest == no_lane || finish[p] > finish[latest] ||
          (finish[p] == finish[latest] && bottom[p] > bottom[latest])) {
        latest = p;
      }
    }
    const std::uint32_t continued =
        latest != no_lane && tail[s.lane[latest]] == latest ? s.lane[latest] : no_lane;
    if (parents.empty() && tail[0] == no_lane && fits(0, t)) chosen = 0;
    if (chosen == no_lane && weight[t] == 0) {
      const std::uint32_t l = latest != no_lane ? s.lane[latest] : 0;
      if (fits(l, t)) chosen = l;  // free tasks never open lanes
    }
    if (chosen == no_lane) {
      // The lane where t can start earliest (a new one, while there are any, can start it
      // when it is ready); of those equally early, the one that needs the fewest waits, then
      // the continued one, then the one idle last (streams stay few).
      std::uint64_t earliest = 0;
      std::size_t fewest = 0;
      for (std::uint32_t l = 0; l < tail.size(); ++l) {
        if (!fits(l, t)) continue;
        const std::uint64_t at = std::max(ready, free_at[l]);
        if (chosen != no_lane && at > earliest) continue;
        waits_on(l, waits, after);
        const bool better = chosen == no_lane || at < earliest || waits.size() < fewest ||
                            (waits.size() == fewest && chosen != continued &&
                             (l == continued || free_at[l] > free_at[chosen]));
        if (better) {
          chosen = l;
          earliest = at;
          fewest = waits.size();
        }
      }
      // A new lane while there are any; the first lane of a class beyond them.
      if (chosen == no_lane || (earliest > ready && tail.size() < max_lanes)) {
        chosen = static_cast<std::uint32_t>(tail.size());
        open_lane(class_of(t));
      }
    }
    s.lane[t] = chosen;
    waits_on(chosen, s.waits[t], clock[chosen]);
    for (std::uint32_t p : parents) s.cross_edges += s.lane[p] != chosen;
    for (std::uint32_t p : s.waits[t]) s.records[p] = 1;
    std::vector<std::int64_t>& c = clock[chosen];
    if (known(c, 0) < -1) {
      s.fork_wait[t] = 1;
      if (c.empty()) c.resize(1, -2);
      c[0] = -1;
    }
    position[t] = next_position[chosen]++;
    if (c.size() <= chosen) c.resize(chosen + 1, -2);
    c[chosen] = position[t];
    seen[t] = c;
    tail[chosen] = t;
    finish[t] = std::max(ready, free_at[chosen]) + weight[t];
    free_at[chosen] = finish[t];
  }
  s.lanes = static_cast<std::uint32_t>(tail.size());
  const std::size_t lanes = s.lanes;
  for (std::uint32_t L = 1; L < lanes; ++L) {
    if (tail[L] == no_lane || known(clock[0], L) >= position[tail[L]]) continue;
    s.joins.push_back(tail[L]);
    s.records[tail[L]] = 1;
    clock[0].resize(lanes, -2);
    for (std::size_t k = 0; k < seen[tail[L]].size(); ++k) {
      clock[0][k] = std::max(clock[0][k], seen[tail[L]][k]);
    }
  }
  return s;
}

}  // namespace cmdgraph::detail
