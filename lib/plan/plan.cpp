// build_plan: deduplicate edges, order (or report the cycle), reduce, then levels and the
// critical path; nested recordings get plans of their own.
#include "plan/plan.hpp"

#include "plan/hazards.hpp"
#include "plan/order.hpp"
#include "plan/radix_sort.hpp"
#include "plan/shaping.hpp"
#include "record/recording.hpp"

#include <cmdgraph/error.hpp>

#include <algorithm>
#include <iterator>
#include <map>

namespace cmdgraph::detail {
namespace {

// The edge Hazards::infer added as `e`, or null for a recorded edge.
const InferredEdge* inferred_edge(const Plan& plan, Edge e) {
  const auto& inferred = plan.hazards.inferred;
  const auto it = std::lower_bound(inferred.begin(), inferred.end(), e,
                                   [](const InferredEdge& a, const Edge& b) { return a.edge < b; });
  return it != inferred.end() && it->edge == e ? &*it : nullptr;
}

[[noreturn]] void report_cycle(const Plan& plan, const std::vector<std::uint32_t>& cycle) {
  std::vector<std::string> names;
  std::string path;
  bool inferred = false;
  for (std::size_t i = 0; i < cycle.size(); ++i) {
    names.push_back(plan.name(cycle[i]));
    const InferredEdge* edge = inferred_edge(plan, {cycle[i], cycle[(i + 1) % cycle.size()]});
    path += "'" + names.back() + (edge ? "' -[" + memory_of(plan, *edge) + "]-> " : "' -> ");
    inferred = inferred || edge;
  }
  path += "'" + names.front() + "'";
  if (inferred) path += " (-[memory]-> is an edge inferred from access to that memory)";
  throw Error(errc::cycle, "command buffer '" + plan.buffer_name + "' has a cycle: " + path,
              std::move(names));
}

// `dag`'s levels, bottom weights and critical path, its order and reduction made.
void compute_levels(const Plan& plan, PlanDag& dag) {
  const std::size_t n = plan.size();
  dag.level.assign(n, 0);
  for (std::uint32_t c : dag.order) {
    for (std::uint32_t p : dag.parents[c]) dag.level[c] = std::max(dag.level[c], dag.level[p] + 1);
    dag.level_count = std::max(dag.level_count, dag.level[c] + 1);
  }
  dag.bottom.assign(n, 0);
  for (auto it = dag.order.rbegin(); it != dag.order.rend(); ++it) {
    std::uint64_t below = 0;
    for (std::uint32_t k : dag.children[*it]) below = std::max(below, dag.bottom[k]);
    dag.bottom[*it] = below + schedule_weight(plan.kind(*it));
  }
  // Follow the heaviest continuation from the heaviest source.
  std::int64_t at = -1;
  for (std::uint32_t c : dag.order) {
    if (dag.parents[c].empty() && (at < 0 || dag.bottom[c] > dag.bottom[at])) at = c;
  }
  while (at >= 0) {
    dag.critical_path.push_back(static_cast<std::uint32_t>(at));
    std::int64_t next = -1;
    for (std::uint32_t k : dag.children[at]) {
      if (next < 0 || dag.bottom[k] > dag.bottom[next]) next = k;
    }
    at = next;
  }
}

// The kept edges a child may launch early on: into a kernel declared programmatic-safe from a
// kernel, or recorded programmatic and not also full. Sorted.
std::vector<Edge> programmatic_among(const Plan& plan, const std::vector<Edge>& kept,
                                     const std::vector<Edge>& full,
                                     const std::vector<Edge>& programmatic) {
  std::vector<Edge> out;
  for (const Edge& e : kept) {
    const bool safe = plan.command(e.child).hints.programmatic_safe &&
                      traits(plan.kind(e.parent)).programmatic;
    if (safe || (std::binary_search(programmatic.begin(), programmatic.end(), e) &&
                 !std::binary_search(full.begin(), full.end(), e))) {
      out.push_back(e);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

using PlanCache = std::map<const Recording*, std::shared_ptr<const Plan>>;

std::shared_ptr<const Plan> build(const Recording& rec, Hazards hazards, PlanCache& cache,
                                  bool body, const std::optional<GraphShape>& shape = {}) {
  if (const auto hit = cache.find(&rec); hit != cache.end()) return hit->second;
  auto plan = std::make_shared<Plan>();
  plan->recording_id = rec.id();
  plan->buffer_name = rec.name();
  plan->commands = rec.shared_commands();
  plan->values = rec.shared_arguments();
  plan->labels = rec.labels();
  const std::size_t n = plan->size();

  // Bodies first: their commands' access is part of the commands that run them. They recurse
  // at most max_nesting_depth levels deep (the recording refused deeper).
  auto bodies = std::make_shared<Plan::BodyPlans>(n);
  for (std::uint32_t c = 0; c < n; ++c) {
    for (const auto& body : bodies_of(plan->payload(c))) {
      (*bodies)[c].push_back(build(*body, hazards, cache, true));
    }
  }
  plan->bodies = std::move(bodies);
  collect_transients(*plan, body);
  collect_access(*plan, rec.declared(), hazards);

  // Made here and shared from now on, by plans of this structure with other values.
  auto dag = std::make_shared<PlanDag>();
  plan->dag = dag;
  const std::vector<Edge> full = distinct_edges(rec.edges());
  const std::vector<Edge> programmatic = distinct_edges(rec.programmatic_edges());
  dag->edges = edge_union(full, programmatic);
  if (plan->hazards.applied == Hazards::infer) infer_edges(*plan, dag->edges);
  OrderResult ordered = topological_order(n, dag->edges);
  if (!ordered.cycle.empty()) report_cycle(*plan, ordered.cycle);
  dag->order = std::move(ordered.order);
  dag->position.resize(n);
  for (std::uint32_t i = 0; i < n; ++i) dag->position[dag->order[i]] = i;

  std::vector<Edge> reduced = reduce_edges(n, dag->edges, dag->position);
  std::vector<std::pair<std::uint32_t, std::uint32_t>> down, up;
  down.reserve(reduced.size());
  up.reserve(reduced.size());
  for (const Edge& e : reduced) {
    down.emplace_back(e.parent, e.child);
    up.emplace_back(e.child, e.parent);
  }
  dag->children = Adjacency::from_pairs(n, down);
  dag->parents = Adjacency::from_pairs(n, up);
  dag->programmatic = programmatic_among(*plan, reduced, full, programmatic);
  compute_levels(*plan, *dag);
  if (plan->hazards.applied == Hazards::validate) validate_edges(*plan);
  if (plan->hazards.applied == Hazards::off) validate_transient_edges(*plan);
  check_transients(*plan);
  plan->shape = shape;
  cache.emplace(&rec, plan);
  return plan;
}

}  // namespace

std::shared_ptr<const GraphShaping> Plan::shaping() const {
  std::call_once(shaping_.once, [this] {
    if (shape) shaping_.value = std::make_shared<const GraphShaping>(shape_graph(*this, *shape));
  });
  return shaping_.value;
}

std::size_t count_prioritised(const Plan& plan) {
  std::size_t count = 0;
  for (std::uint32_t c = 0; c < plan.size(); ++c) {
    count += plan.command(c).hints.priority.has_value();
    for (const auto& body : plan.bodies_of(c)) count += count_prioritised(*body);
  }
  return count;
}

std::vector<Edge> edge_union(const std::vector<Edge>& full, const std::vector<Edge>& programmatic) {
  std::vector<Edge> edges;
  edges.reserve(full.size() + programmatic.size());
  std::set_union(full.begin(), full.end(), programmatic.begin(), programmatic.end(),
                 std::back_inserter(edges));
  return edges;
}

bool are_distinct(const std::vector<Edge>& edges) noexcept {
  return std::adjacent_find(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) {
           return !(a < b);
         }) == edges.end();
}

std::vector<Edge> distinct_edges(const std::vector<Edge>& edges) {
  if (are_distinct(edges)) return edges;
  std::vector<Edge> sorted = edges;
  // By parent * n + child: a key of few digits for a counting sort, which leaves edges that
  // come sorted (as recorded edges nearly always do) as they are after one pass.
  std::uint64_t n = 0;
  for (const Edge& e : sorted) n = std::max<std::uint64_t>(n, std::max(e.parent, e.child) + 1);
  radix_sort(sorted, [n](const Edge& e) { return e.parent * n + e.child; });
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  return sorted;
}

std::shared_ptr<const Plan> build_plan(const Recording& recording, const PlanOptions& options) {
  PlanCache cache;
  return build(recording, options.hazards, cache, false, options.shape);
}

}  // namespace cmdgraph::detail
