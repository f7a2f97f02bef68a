// Graph shaping: the time each command is counted as taking, list scheduling onto lanes, lane
// edges, and the reduction of the union.
#include "plan/shaping.hpp"

#include "plan/order.hpp"

#include <algorithm>
#include <optional>
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

// The cost of `c`: its own, else the measured duration, if any.
std::optional<std::chrono::nanoseconds> cost_of(const Plan& plan, std::uint32_t c,
                                                std::span<const std::chrono::nanoseconds> measured) {
  if (const auto& own = plan.command(c).hints.cost) return own;
  if (c < measured.size()) return measured[c];
  return std::nullopt;
}

// How long each command is counted as taking: its cost plus the launch unit (in ns), or one
// unit each; 0 for barriers and events. A command taking no lane may have no cost: it counts
// the launch unit alone.
std::vector<std::uint64_t> times_of(const Plan& plan, bool by_costs,
                                    std::span<const std::chrono::nanoseconds> measured) {
  std::vector<std::uint64_t> time(plan.size(), 0);
  for (std::uint32_t c = 0; c < plan.size(); ++c) {
    if (!takes_time(plan, c)) continue;
    const auto cost = cost_of(plan, c, measured).value_or(std::chrono::nanoseconds(0));
    time[c] = by_costs ? static_cast<std::uint64_t>((cost + shaping_launch_unit).count()) : 1;
  }
  return time;
}

// The time of the heaviest path from each command to a sink, the command's own included.
std::vector<std::uint64_t> tails_of(const Plan& plan, const std::vector<std::uint64_t>& time) {
  std::vector<std::uint64_t> tail(plan.size(), 0);
  for (auto it = plan.dag->order.rbegin(); it != plan.dag->order.rend(); ++it) {
    std::uint64_t below = 0;
    for (std::uint32_t k : plan.dag->children[*it]) below = std::max(below, tail[k]);
    tail[*it] = time[*it] + below;
  }
  return tail;
}

// The modelled run without lanes: when each command starts, and the order they start in.
struct Schedule {
  std::vector<std::uint64_t> start;
  std::vector<std::uint32_t> order;  // a topological order of the plan; starts of commands
                                     // that take time never decrease along it
};

// Commands start as soon as their parents finished, in order of that time, the heavier path
// below first among equals, then recording order; one that takes time also starts at least
// `gap` after the one that took time before it (the device dispatches one node at a time).
Schedule schedule_of(const Plan& plan, const std::vector<std::uint64_t>& time,
                     const std::vector<std::uint64_t>& tail, std::uint64_t gap) {
  Schedule out;
  out.start.assign(plan.size(), 0);
  out.order.reserve(plan.size());
  std::vector<std::uint64_t> ready(plan.size(), 0);
  std::vector<std::size_t> waiting(plan.size());
  // (ready, the heavier tail first, recording order), least first.
  using Entry = std::tuple<std::uint64_t, std::uint64_t, std::uint32_t>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> available;
  for (std::uint32_t c = 0; c < plan.size(); ++c) {
    waiting[c] = plan.dag->parents[c].size();
    if (waiting[c] == 0) available.emplace(0, ~tail[c], c);
  }
  std::uint64_t next_dispatch = 0;
  while (!available.empty()) {
    const std::uint32_t c = std::get<2>(available.top());
    available.pop();
    std::uint64_t start = ready[c];
    if (time[c] > 0) {
      start = std::max(start, next_dispatch);
      next_dispatch = start + gap;
    }
    out.start[c] = start;
    out.order.push_back(c);
    for (std::uint32_t k : plan.dag->children[c]) {
      ready[k] = std::max(ready[k], start + time[c]);
      if (--waiting[k] == 0) available.emplace(ready[k], ~tail[k], k);
    }
  }
  return out;
}

// The most lane-taking commands that run at once in that schedule, [start, start + time)
// each: with this many lanes every one keeps its start (intervals taken by start, each onto a
// lane free by then, need no more).
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

// The lane edges of `order` list-scheduled onto `lanes` lanes (see shape_graph).
std::vector<Edge> lane_edges(const Plan& plan, const std::vector<std::uint32_t>& order,
                             const std::vector<std::uint64_t>& time,
                             const std::vector<std::uint64_t>& tail, std::uint64_t gap,
                             std::uint32_t lanes) {
  std::vector<std::uint64_t> finish(plan.size(), 0), free(lanes, 0);
  std::vector<std::uint32_t> last(lanes, no_command), lane_of(plan.size(), no_command);
  // Lanes by the time they are free, lowest lane first; an entry is stale once the lane's
  // time moved on.
  using Slot = std::pair<std::uint64_t, std::uint32_t>;
  std::priority_queue<Slot, std::vector<Slot>, std::greater<>> idle;
  for (std::uint32_t l = 0; l < lanes; ++l) idle.emplace(0, l);
  std::vector<Edge> added;
  std::uint64_t next_dispatch = 0;  // as in schedule_of
  for (std::uint32_t c : order) {
    std::uint64_t ready = 0;
    for (std::uint32_t p : plan.dag->parents[c]) ready = std::max(ready, finish[p]);
    if (time[c] > 0) ready = std::max(ready, next_dispatch);
    if (!takes_lane(plan, c)) {
      finish[c] = ready + time[c];
      if (time[c] > 0) next_dispatch = ready + gap;
      continue;
    }
    // A parent that is last on its lane, free by then: follow it there (no edge to add).
    std::uint32_t lane = no_command;
    for (std::uint32_t p : plan.dag->parents[c]) {
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
      const auto parents = plan.dag->parents[c];
      if (std::find(parents.begin(), parents.end(), last[lane]) == parents.end()) {
        added.push_back({last[lane], c});
      }
    }
    finish[c] = begin + time[c];
    next_dispatch = begin + gap;
    free[lane] = finish[c];
    last[lane] = c;
    lane_of[c] = lane;
    idle.emplace(free[lane], lane);
  }
  return added;
}

// Why shaping stops before scheduling, or an empty reason to go on; `wants_costs` when only
// costs are missing.
GraphShaping unshaped(const Plan& plan, GraphShape shape,
                      std::span<const std::chrono::nanoseconds> measured) {
  GraphShaping out;
  if (shape.is_off()) {
    out.reason = "off";
    return out;
  }
  const std::string mode = shape.is_automatic() ? "automatic" : "uniform";
  const PlanDag& dag = *plan.dag;
  const bool chains_only = std::all_of(dag.order.begin(), dag.order.end(), [&](std::uint32_t c) {
    return dag.parents[c].size() <= 1 && dag.children[c].size() <= 1;
  });
  if (shape.lane_count() == 0 && chains_only) {
    // Each chain keeps a lane of its own: nothing to add, and nothing to compute.
    out.reason = mode + ": chains only, nothing to add";
    return out;
  }
  if (!shape.is_automatic()) return out;
  std::size_t taking = 0, uncosted = 0;
  for (std::uint32_t c = 0; c < plan.size(); ++c) {
    if (!takes_lane(plan, c)) continue;
    ++taking;
    uncosted += !cost_of(plan, c, measured);
  }
  if (uncosted == 0) return out;
  out.reason = "automatic: " + std::to_string(uncosted) + " of " + std::to_string(taking) +
               " commands that take a lane have no cost (cost(), costs_from()), so the plan's "
               "edges stand";
  out.wants_costs = true;
  return out;
}

bool every_lane_has_a_cost(const Plan& plan, std::span<const std::chrono::nanoseconds> measured) {
  bool any = false;
  for (std::uint32_t c = 0; c < plan.size(); ++c) {
    if (!takes_lane(plan, c)) continue;
    if (!cost_of(plan, c, measured)) return false;
    any = true;
  }
  return any;
}

}  // namespace

GraphShaping shape_graph(const Plan& plan, GraphShape shape,
                         std::span<const std::chrono::nanoseconds> measured) {
  GraphShaping out = unshaped(plan, shape, measured);
  if (!out.reason.empty()) return out;
  const bool by_costs =
      shape.is_automatic() || (shape.lane_count() > 0 && every_lane_has_a_cost(plan, measured));
  const std::vector<std::uint64_t> time = times_of(plan, by_costs, measured);
  const std::vector<std::uint64_t> tail = tails_of(plan, time);
  const std::uint64_t gap = by_costs ? shaping_dispatch_gap.count() : 0;
  const Schedule unshaped = schedule_of(plan, time, tail, gap);
  const std::uint32_t lanes = shape.lane_count() > 0
                                  ? shape.lane_count()
                                  : most_overlapping(plan, unshaped.start, time);
  const std::string count = std::to_string(lanes);
  const std::string asked =
      shape.is_automatic() ? "automatic: " + count + " lanes (the most commands the costs run at once)"
      : shape.is_uniform() ? "uniform: " + count + " lanes (the widest level, each command one unit)"
      : "lanes(" + count + ")" + (by_costs ? ", by costs" : ", each command one unit");
  if (lanes == 0) {
    out.reason = asked + ": nothing takes a lane";
    return out;
  }
  const std::vector<std::uint32_t>& order = unshaped.order;
  const std::vector<Edge> added = lane_edges(plan, order, time, tail, gap, lanes);
  if (added.empty()) {
    out.reason = asked + ": every lane edge is an edge of the plan, nothing to add";
    return out;
  }
  std::vector<Edge> edges = added;
  for (std::uint32_t c = 0; c < plan.size(); ++c) {
    for (std::uint32_t k : plan.dag->children[c]) edges.push_back({c, k});
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
    const auto children = plan.dag->children[e.parent];
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
  out.edges_dropped = plan.dag->children.edges() - from_plan;
  out.reason = asked + ": " + std::to_string(out.edges_added) + " lane edges added, " +
               std::to_string(out.edges_dropped) + " edges they imply left out";
  return out;
}

}  // namespace cmdgraph::detail
