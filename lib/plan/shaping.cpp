// Graph shaping: the time each command is counted as taking, list scheduling onto lanes, lane
// edges, and the reduction of the union.
#include "plan/shaping.hpp"

#include "plan/order.hpp"

#include <algorithm>
#include <numeric>
#include <queue>
#include <tuple>
#include <vector>

namespace cmdgraph::detail {
namespace {

constexpr std::uint32_t no_command = ~0u;

bool takes_time(const Plan& plan, std::uint32_t c) { return schedule_weight(plan.kind(c)) > 0; }

// Whether `c` takes a lane. A command with a priority of its own keeps exactly its recorded
// edges: a lane would order it behind other work (an urgent probe behind a low-priority load).
bool takes_lane(const Plan& plan, std::uint32_t c) {
  return takes_time(plan, c) && !plan.command(c).hints.priority;
}

// How long each command is counted as taking: its cost, at least a launch unit (in ns), or
// one unit each; 0 for barriers and events. A command taking no lane may have no cost: it
// counts a launch unit.
std::vector<std::uint64_t> times_of(const Plan& plan, bool by_costs) {
  std::vector<std::uint64_t> time(plan.size(), 0);
  for (std::uint32_t c = 0; c < plan.size(); ++c) {
    if (!takes_time(plan, c)) continue;
    const auto cost = plan.command(c).hints.cost.value_or(shaping_launch_unit);
    time[c] = by_costs ? static_cast<std::uint64_t>(std::max(cost, shaping_launch_unit).count())
                       : 1;
  }
  return time;
}

// Each command's earliest start along the plan's edges, with as many lanes as it takes.
std::vector<std::uint64_t> earliest_starts(const Plan& plan, const std::vector<std::uint64_t>& time) {
  std::vector<std::uint64_t> start(plan.size(), 0);
  for (std::uint32_t c : plan.order) {
    for (std::uint32_t p : plan.parents[c]) start[c] = std::max(start[c], start[p] + time[p]);
  }
  return start;
}

// The most lane-taking commands that run at once in that schedule, [start, start + time)
// each: with this many lanes every one keeps its earliest start (intervals taken by start,
// each onto a lane free by then, need no more).
std::uint32_t most_overlapping(const Plan& plan, const std::vector<std::uint64_t>& start,
                               const std::vector<std::uint64_t>& time) {
  std::vector<std::pair<std::uint64_t, int>> ends;  // (time, -1 at an end, +1 at a start)
  for (std::uint32_t c = 0; c < plan.size(); ++c) {
    if (!takes_lane(plan, c)) continue;
    ends.emplace_back(start[c], 1);
    ends.emplace_back(start[c] + time[c], -1);
  }
  std::sort(ends.begin(), ends.end());  // an end before a start at the same time
  std::int64_t running = 0, most = 0;
  for (const auto& [at, step] : ends) most = std::max(most, running += step);
  return static_cast<std::uint32_t>(most);
}

// The time of the heaviest path from each command to a sink, the command's own included.
std::vector<std::uint64_t> tails_of(const Plan& plan, const std::vector<std::uint64_t>& time) {
  std::vector<std::uint64_t> tail(plan.size(), 0);
  for (auto it = plan.order.rbegin(); it != plan.order.rend(); ++it) {
    std::uint64_t below = 0;
    for (std::uint32_t k : plan.children[*it]) below = std::max(below, tail[k]);
    tail[*it] = time[*it] + below;
  }
  return tail;
}

// Commands by earliest start, then level (so parents come first among equal starts), then the
// heavier path below first: a topological order of the plan and of every lane edge added in it.
std::vector<std::uint32_t> schedule_order(const Plan& plan, const std::vector<std::uint64_t>& start,
                                          const std::vector<std::uint64_t>& tail) {
  std::vector<std::uint32_t> order(plan.size());
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    return std::tuple(start[a], plan.level[a], tail[b], a) <
           std::tuple(start[b], plan.level[b], tail[a], b);
  });
  return order;
}

// The lane edges of `order` list-scheduled onto `lanes` lanes (see shape_graph).
std::vector<Edge> lane_edges(const Plan& plan, const std::vector<std::uint32_t>& order,
                             const std::vector<std::uint64_t>& time,
                             const std::vector<std::uint64_t>& tail, std::uint32_t lanes) {
  std::vector<std::uint64_t> finish(plan.size(), 0), free(lanes, 0);
  std::vector<std::uint32_t> last(lanes, no_command), lane_of(plan.size(), no_command);
  // Lanes by the time they are free, lowest lane first; an entry is stale once the lane's
  // time moved on.
  using Slot = std::pair<std::uint64_t, std::uint32_t>;
  std::priority_queue<Slot, std::vector<Slot>, std::greater<>> idle;
  for (std::uint32_t l = 0; l < lanes; ++l) idle.emplace(0, l);
  std::vector<Edge> added;
  for (std::uint32_t c : order) {
    std::uint64_t ready = 0;
    for (std::uint32_t p : plan.parents[c]) ready = std::max(ready, finish[p]);
    if (!takes_lane(plan, c)) {
      finish[c] = ready + time[c];
      continue;
    }
    // A parent that is last on its lane, free by now: follow it there (no edge to add).
    std::uint32_t lane = no_command;
    for (std::uint32_t p : plan.parents[c]) {
      const std::uint32_t l = lane_of[p];
      if (l != no_command && last[l] == p && free[l] <= ready &&
          (lane == no_command || tail[p] > tail[last[lane]])) {
        lane = l;
      }
    }
    if (lane == no_command) {
      while (idle.top().first != free[idle.top().second]) idle.pop();  // stale
      lane = idle.top().second;
    }
    const std::uint64_t begin = std::max(ready, free[lane]);
    if (last[lane] != no_command) {
      const auto parents = plan.parents[c];
      if (std::find(parents.begin(), parents.end(), last[lane]) == parents.end()) {
        added.push_back({last[lane], c});
      }
    }
    finish[c] = begin + time[c];
    free[lane] = finish[c];
    last[lane] = c;
    lane_of[c] = lane;
    idle.emplace(free[lane], lane);
  }
  return added;
}

// Why shaping stops before scheduling, or an empty string to go on.
std::string unshaped_because(const Plan& plan, GraphShape shape) {
  if (shape.is_off()) return "off";
  const std::string mode = shape.is_automatic() ? "automatic" : "uniform";
  const bool chains_only = std::all_of(plan.order.begin(), plan.order.end(), [&](std::uint32_t c) {
    return plan.parents[c].size() <= 1 && plan.children[c].size() <= 1;
  });
  if (shape.lane_count() == 0 && chains_only) {
    // Each chain keeps a lane of its own: nothing to add, and nothing to compute.
    return mode + ": chains only, nothing to add";
  }
  if (!shape.is_automatic()) return {};
  std::size_t taking = 0, uncosted = 0;
  for (std::uint32_t c = 0; c < plan.size(); ++c) {
    if (!takes_lane(plan, c)) continue;
    ++taking;
    uncosted += !plan.command(c).hints.cost;
  }
  if (uncosted == 0) return {};
  return "automatic: " + std::to_string(uncosted) + " of " + std::to_string(taking) +
         " commands that take a lane have no cost (cost(), costs_from()), so the plan's "
         "edges stand";
}

bool every_lane_has_a_cost(const Plan& plan) {
  bool any = false;
  for (std::uint32_t c = 0; c < plan.size(); ++c) {
    if (!takes_lane(plan, c)) continue;
    if (!plan.command(c).hints.cost) return false;
    any = true;
  }
  return any;
}

}  // namespace

GraphShaping shape_graph(const Plan& plan, GraphShape shape) {
  GraphShaping out;
  out.reason = unshaped_because(plan, shape);
  if (!out.reason.empty()) return out;
  const bool by_costs =
      shape.is_automatic() || (shape.lane_count() > 0 && every_lane_has_a_cost(plan));
  const std::vector<std::uint64_t> time = times_of(plan, by_costs);
  const std::vector<std::uint64_t> start = earliest_starts(plan, time);
  const std::uint32_t lanes =
      shape.lane_count() > 0 ? shape.lane_count() : most_overlapping(plan, start, time);
  const std::string count = std::to_string(lanes);
  const std::string asked =
      shape.is_automatic() ? "automatic: " + count + " lanes (the most commands the costs run at once)"
      : shape.is_uniform() ? "uniform: " + count + " lanes (the widest level, each command one unit)"
      : "lanes(" + count + ")" + (by_costs ? ", by costs" : ", each command one unit");
  if (lanes == 0) {
    out.reason = asked + ": nothing takes a lane";
    return out;
  }
  const std::vector<std::uint64_t> tail = tails_of(plan, time);
  const std::vector<std::uint32_t> order = schedule_order(plan, start, tail);
  const std::vector<Edge> added = lane_edges(plan, order, time, tail, lanes);
  if (added.empty()) {
    out.reason = asked + ": every lane edge is an edge of the plan, nothing to add";
    return out;
  }
  std::vector<Edge> edges = added;
  for (std::uint32_t c = 0; c < plan.size(); ++c) {
    for (std::uint32_t k : plan.children[c]) edges.push_back({c, k});
  }
  std::sort(edges.begin(), edges.end());
  std::vector<std::uint32_t> position(plan.size());
  for (std::uint32_t i = 0; i < order.size(); ++i) position[order[i]] = i;
  const std::vector<Edge> kept = transitive_reduction(plan.size(), edges, position);

  std::vector<std::pair<std::uint32_t, std::uint32_t>> up;
  up.reserve(kept.size());
  std::size_t from_plan = 0;
  for (const Edge& e : kept) {
    up.emplace_back(e.child, e.parent);
    const auto children = plan.children[e.parent];
    if (std::find(children.begin(), children.end(), e.child) != children.end()) ++from_plan;
  }
  if (kept.size() == from_plan) {
    // Every lane edge was implied by the plan's own (a fork-join's lanes run through its joins).
    out.reason = asked + ": every lane edge is implied by the plan's edges, nothing to add";
    return out;
  }
  out.lanes = lanes;
  out.parents = Adjacency::from_pairs(plan.size(), up);
  out.order = order;
  out.edges_added = kept.size() - from_plan;
  out.edges_dropped = plan.children.edges() - from_plan;
  out.reason = asked + ": " + std::to_string(out.edges_added) + " lane edges added, " +
               std::to_string(out.edges_dropped) + " edges they imply left out";
  return out;
}

}  // namespace cmdgraph::detail
