// Graph shaping: list scheduling onto lanes, lane edges, and the reduction of the union.
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

std::uint32_t weight(const Plan& plan, std::uint32_t c) {
  return schedule_weight(plan.kind(c)) > 0 ? 1 : 0;
}

// Whether `c` takes a lane. A command with a priority of its own keeps exactly its recorded
// edges: a lane would order it behind other work (an urgent probe behind a low-priority load).
bool takes_lane(const Plan& plan, std::uint32_t c) {
  return weight(plan, c) && !plan.command(c).hints.priority;
}

// Each command's earliest start with as many lanes as it takes, every weighted command one unit.
std::vector<std::uint32_t> earliest_starts(const Plan& plan) {
  std::vector<std::uint32_t> start(plan.size(), 0);
  for (std::uint32_t c : plan.order) {
    for (std::uint32_t p : plan.parents[c]) start[c] = std::max(start[c], start[p] + weight(plan, p));
  }
  return start;
}

// The most weighted commands that start together in that schedule: with this many lanes no
// command starts later than without lanes (in units).
std::uint32_t widest_level(const Plan& plan, const std::vector<std::uint32_t>& start) {
  std::vector<std::uint32_t> width;
  for (std::uint32_t c = 0; c < plan.size(); ++c) {
    if (!weight(plan, c)) continue;
    if (start[c] >= width.size()) width.resize(start[c] + 1, 0);
    ++width[start[c]];
  }
  return width.empty() ? 0 : *std::max_element(width.begin(), width.end());
}

// Commands by earliest start, then level (so parents come first among equal starts), then the
// heavier path below first: a topological order of the plan and of every lane edge added in it.
std::vector<std::uint32_t> schedule_order(const Plan& plan, const std::vector<std::uint32_t>& start) {
  std::vector<std::uint32_t> order(plan.size());
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    return std::tuple(start[a], plan.level[a], plan.bottom[b], a) <
           std::tuple(start[b], plan.level[b], plan.bottom[a], b);
  });
  return order;
}

// The lane edges of `order` list-scheduled onto `lanes` lanes (see shape_graph).
std::vector<Edge> lane_edges(const Plan& plan, const std::vector<std::uint32_t>& order,
                             std::uint32_t lanes) {
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
      finish[c] = ready + weight(plan, c);
      continue;
    }
    // A parent that is last on its lane, free by now: follow it there (no edge to add).
    std::uint32_t lane = no_command;
    for (std::uint32_t p : plan.parents[c]) {
      const std::uint32_t l = lane_of[p];
      if (l != no_command && last[l] == p && free[l] <= ready &&
          (lane == no_command || plan.bottom[p] > plan.bottom[last[lane]])) {
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
    finish[c] = begin + 1;
    free[lane] = finish[c];
    last[lane] = c;
    lane_of[c] = lane;
    idle.emplace(free[lane], lane);
  }
  return added;
}

}  // namespace

GraphShaping shape_graph(const Plan& plan, GraphShape shape) {
  GraphShaping out;
  if (shape.is_off()) {
    out.reason = "off";
    return out;
  }
  const bool chains_only = std::all_of(plan.order.begin(), plan.order.end(), [&](std::uint32_t c) {
    return plan.parents[c].size() <= 1 && plan.children[c].size() <= 1;
  });
  if (shape.is_automatic() && chains_only) {
    // Each chain keeps a lane of its own: nothing to add, and nothing to compute.
    out.reason = "automatic: chains only, nothing to add";
    return out;
  }
  const std::vector<std::uint32_t> start = earliest_starts(plan);
  const std::uint32_t widest = widest_level(plan, start);
  const std::uint32_t lanes = shape.is_automatic() ? widest : shape.lane_count();
  const std::string asked = shape.is_automatic()
                                ? "automatic: " + std::to_string(lanes) + " lanes (the widest level)"
                                : "lanes(" + std::to_string(lanes) + ")";
  if (lanes == 0) {
    out.reason = asked + ": nothing takes a lane";
    return out;
  }
  const std::vector<std::uint32_t> order = schedule_order(plan, start);
  const std::vector<Edge> added = lane_edges(plan, order, lanes);
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
