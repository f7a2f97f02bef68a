// build_plan: deduplicate edges, order (or report the cycle), reduce, then levels and the
// critical path; nested recordings get plans of their own.
#include "plan/plan.hpp"

#include "plan/order.hpp"

#include <cmdgraph/error.hpp>

#include <algorithm>
#include <map>

namespace cmdgraph::detail {
namespace {

std::vector<Edge> distinct_edges(const std::vector<Edge>& edges) {
  std::vector<Edge> sorted = edges;
  std::sort(sorted.begin(), sorted.end(), [](const Edge& a, const Edge& b) {
    return a.parent != b.parent ? a.parent < b.parent : a.child < b.child;
  });
  sorted.erase(std::unique(sorted.begin(), sorted.end(),
                           [](const Edge& a, const Edge& b) {
                             return a.parent == b.parent && a.child == b.child;
                           }),
               sorted.end());
  return sorted;
}

[[noreturn]] void report_cycle(const Recording& rec, const std::vector<std::uint32_t>& cycle) {
  std::vector<std::string> names;
  std::string path;
  for (std::uint32_t c : cycle) {
    names.push_back(rec.command_name(c));
    path += "'" + names.back() + "' -> ";
  }
  path += "'" + names.front() + "'";
  throw Error(errc::cycle, "command buffer '" + rec.name() + "' has a cycle: " + path,
              std::move(names));
}

void compute_levels(Plan& plan) {
  const std::size_t n = plan.size();
  plan.level.assign(n, 0);
  for (std::uint32_t c : plan.order) {
    for (std::uint32_t p : plan.parents[c]) plan.level[c] = std::max(plan.level[c], plan.level[p] + 1);
    plan.level_count = std::max(plan.level_count, plan.level[c] + 1);
  }
  plan.bottom.assign(n, 0);
  for (auto it = plan.order.rbegin(); it != plan.order.rend(); ++it) {
    std::uint64_t below = 0;
    for (std::uint32_t k : plan.children[*it]) below = std::max(below, plan.bottom[k]);
    plan.bottom[*it] = below + schedule_weight(plan.command(*it).kind);
  }
  // Follow the heaviest continuation from the heaviest source.
  std::int64_t at = -1;
  for (std::uint32_t c : plan.order) {
    if (plan.parents[c].empty() && (at < 0 || plan.bottom[c] > plan.bottom[at])) at = c;
  }
  while (at >= 0) {
    plan.critical_path.push_back(static_cast<std::uint32_t>(at));
    std::int64_t next = -1;
    for (std::uint32_t k : plan.children[at]) {
      if (next < 0 || plan.bottom[k] > plan.bottom[next]) next = k;
    }
    at = next;
  }
}

using PlanCache = std::map<const Recording*, std::shared_ptr<const Plan>>;

std::shared_ptr<const Plan> build(std::shared_ptr<const Recording> recording, PlanCache& cache) {
  if (const auto hit = cache.find(recording.get()); hit != cache.end()) return hit->second;
  auto plan = std::make_shared<Plan>();
  const Recording& rec = *recording;
  plan->recording = std::move(recording);
  const std::size_t n = rec.commands().size();

  const std::vector<Edge> edges = distinct_edges(rec.edges());
  plan->edges_recorded = edges.size();
  OrderResult ordered = topological_order(n, edges);
  if (!ordered.cycle.empty()) report_cycle(rec, ordered.cycle);
  plan->order = std::move(ordered.order);
  plan->position.resize(n);
  for (std::uint32_t i = 0; i < n; ++i) plan->position[plan->order[i]] = i;

  std::vector<Edge> reduced = transitive_reduction(n, edges, plan->position);
  std::vector<std::pair<std::uint32_t, std::uint32_t>> down, up;
  down.reserve(reduced.size());
  up.reserve(reduced.size());
  for (const Edge& e : reduced) {
    down.emplace_back(e.parent, e.child);
    up.emplace_back(e.child, e.parent);
  }
  plan->children = Adjacency::from_pairs(n, down);
  plan->parents = Adjacency::from_pairs(n, up);
  compute_levels(*plan);

  plan->nested.resize(n);
  for (std::uint32_t c = 0; c < n; ++c) {
    const Payload& payload = rec.commands()[c].payload;
    if (const auto* nested = std::get_if<NestedPayload>(&payload)) {
      plan->nested[c] = build(nested->recording, cache);
    } else if (const auto* loop = std::get_if<LoopPayload>(&payload)) {
      plan->nested[c] = build(loop->body, cache);
    }
  }
  cache.emplace(&rec, plan);
  return plan;
}

}  // namespace

namespace {
std::optional<std::string> find_command_in(const Plan& plan, CommandKind kind, const Plan& root) {
  for (std::uint32_t c = 0; c < plan.size(); ++c) {
    if (plan.command(c).kind == kind) return command_label(plan, c, root);
    if (plan.nested[c]) {
      if (auto found = find_command_in(*plan.nested[c], kind, root)) return found;
    }
  }
  return std::nullopt;
}
}  // namespace

std::optional<std::string> find_command(const Plan& plan, CommandKind kind) {
  return find_command_in(plan, kind, plan);
}

std::uint64_t schedule_weight(CommandKind kind) noexcept {
  switch (kind) {
    case CommandKind::barrier:
    case CommandKind::event_record:
    case CommandKind::event_wait: return 0;
    default: return 1;
  }
}

std::shared_ptr<const Plan> build_plan(std::shared_ptr<const Recording> recording) {
  PlanCache cache;
  return build(std::move(recording), cache);
}

}  // namespace cmdgraph::detail
