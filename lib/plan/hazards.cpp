// Hazards: the two uses of the sweep's immediate conflicts (plan/conflicts.cpp): inferring
// edges in recording order, validating the recorded ones in a topological order.
#include "plan/hazards.hpp"

#include "plan/pass_walk.hpp"
#include "plan/plan.hpp"
#include "plan/radix_sort.hpp"
#include "plan/reach.hpp"

#include <cmdgraph/error.hpp>

#include <algorithm>
#include <functional>
#include <iterator>
#include <numeric>
#include <queue>
#include <tuple>
#include <unordered_map>

namespace cmdgraph::detail {
namespace {

// An access without a label takes the label another access of the same view has (a copy of a
// buffer a kernel declared as "y" is "y" too).
void share_labels(Plan& plan) {
  std::unordered_map<std::uintptr_t, const std::string*> labels;
  for (const MemoryAccess& a : plan.access) {
    if (a.label) labels.emplace(a.origin, a.label);
  }
  if (labels.empty()) return;
  for (MemoryAccess& a : plan.access) {
    if (const auto it = labels.find(a.origin); !a.label && it != labels.end()) {
      a.label = it->second;
    }
  }
}

// The label accesses of the view starting at `origin` have in `plan` (null if none).
const std::string* label_of(const Plan& plan, std::uintptr_t origin) {
  for (const MemoryAccess& a : plan.access) {
    if (a.origin == origin && a.label) return a.label;
  }
  return nullptr;
}

// An unordered pair one side of which allocates or frees transient memory, in words about its
// lifetime; empty for other pairs.
std::string lifetime_hazard(const Plan& plan, std::uint32_t c, const MemoryAccess& a,
                            std::uint32_t d, const MemoryAccess& b) {
  if (b.role == TransientRole::allocation || (b.role == TransientRole::release &&
                                              a.role != TransientRole::allocation)) {
    return lifetime_hazard(plan, d, b, c, a);
  }
  const std::string memory = "transient memory '" + a.name() + "'";
  if (a.role == TransientRole::allocation && b.role == TransientRole::release) {
    return memory + " is freed by '" + plan.name(d) + "' with no path from its allocation '" +
           plan.name(c) + "' to the free";
  }
  if (a.role == TransientRole::allocation) {
    return "command '" + plan.name(d) + "' uses " + memory + " with no path from its allocation '" +
           plan.name(c) + "' to it: it may run before the memory exists";
  }
  if (a.role == TransientRole::release) {
    return "command '" + plan.name(d) + "' uses " + memory + " with no path from it to its free '" +
           plan.name(c) + "': it may run after the memory is released";
  }
  return {};
}

std::vector<std::uint32_t> ranks_of(const std::vector<std::uint32_t>& order) {
  std::vector<std::uint32_t> rank(order.size());
  for (std::uint32_t i = 0; i < order.size(); ++i) rank[order[i]] = i;
  return rank;
}

std::string describe(const Plan& plan, const AccessLists& access, const Conflict& k) {
  const MemoryAccess& a = access[k.first][k.first_access];
  const MemoryAccess& b = access[k.second][k.second_access];
  if (std::string lifetime = lifetime_hazard(plan, k.first, a, k.second, b); !lifetime.empty()) {
    return lifetime;
  }
  return "command '" + plan.name(k.first) + "' " + verb(a.mode) + " " + a.describe() +
         " while '" + plan.name(k.second) + "' " + verb(b.mode) + " " + b.describe() +
         " with no path between them (" + hazard_kind(a, b) + ")";
}

}  // namespace


std::vector<std::uint32_t> validation_order(const Plan& plan) {
  const std::size_t n = plan.size();
  // Where every edge runs forward in recording order (as recorded edges mostly do, and
  // inferred ones always), recording order is the order sought: each command is ready once
  // those before it are placed, and it is the earliest recorded of the ready ones.
  bool forward = true;
  for (std::uint32_t c = 0; c < n && forward; ++c) {
    for (const std::uint32_t k : plan.dag->children[c]) forward = forward && c < k;
  }
  if (forward) {
    std::vector<std::uint32_t> order(n);
    std::iota(order.begin(), order.end(), 0u);
    return order;
  }
  std::vector<std::uint32_t> waiting(n);
  std::priority_queue<std::uint32_t, std::vector<std::uint32_t>, std::greater<>> ready;
  for (std::uint32_t c = 0; c < n; ++c) {
    waiting[c] = static_cast<std::uint32_t>(plan.dag->parents[c].size());
    if (waiting[c] == 0) ready.push(c);
  }
  std::vector<std::uint32_t> order;
  order.reserve(n);
  while (!ready.empty()) {
    const std::uint32_t c = ready.top();
    ready.pop();
    order.push_back(c);
    for (std::uint32_t k : plan.dag->children[c]) {
      if (--waiting[k] == 0) ready.push(k);
    }
  }
  return order;
}

std::string memory_of(const Plan& plan, const InferredEdge& e) {
  return plan.access_of(e.edge.parent)[e.access].name();
}

const char* hazard_kind(const MemoryAccess& first, const MemoryAccess& second) noexcept {
  if (first.writes() && second.reads()) return "read-after-write";
  if (first.writes()) return "write-after-write";
  return "write-after-read";
}

void collect_access(Plan& plan, std::span<const DeclaredAccess> declared, Hazards requested) {
  plan.hazards.requested = requested;
  plan.hazards.declared = declared.size();
  // Declarations come in the order made, nearly always command by command.
  std::vector<DeclaredAccess> regrouped;
  const auto by_command = [](const DeclaredAccess& a, const DeclaredAccess& b) {
    return a.command < b.command;
  };
  if (!std::is_sorted(declared.begin(), declared.end(), by_command)) {
    regrouped.assign(declared.begin(), declared.end());
    std::stable_sort(regrouped.begin(), regrouped.end(), by_command);
    declared = regrouped;
  }
  std::vector<MemoryAccess>& access = plan.access;
  access.reserve(declared.size());
  plan.access_end.reserve(plan.size());
  auto next = declared.begin();
  for (std::uint32_t c = 0; c < plan.size(); ++c) {
    const std::size_t begin = access.size();
    for (; next != declared.end() && next->command == c; ++next) access.push_back(next->access);
    add_implied_access(plan.payload(c), plan.arguments(), access);
    add_transient_access(plan, c, access, begin);
    for (const auto& body : plan.bodies_of(c)) {
      access.insert(access.end(), body->access.begin(), body->access.end());
    }
    plan.access_end.push_back(static_cast<std::uint32_t>(access.size()));
  }
  share_labels(plan);
  // automatic validates whatever touches memory it names: declared access, a copy's, fill's
  // or collective's own, transient memory (nested bodies' access included).
  plan.hazards.applied = requested != Hazards::automatic ? requested
                         : access.empty()                ? Hazards::off
                                                         : Hazards::validate;
}

void infer_edges(Plan& plan, std::vector<Edge>& edges) {
  std::vector<std::uint32_t> recording_order(plan.size());
  std::iota(recording_order.begin(), recording_order.end(), 0u);
  const std::vector<Conflict> conflicts =
      immediate_conflicts(AccessLists(plan), recording_order);
  const std::vector<Edge>& recorded = edges;  // sorted and distinct
  // Each new edge, with the first conflict that asks for it (which names its memory).
  std::vector<std::pair<Edge, std::uint32_t>> wanted;
  wanted.reserve(conflicts.size());
  for (std::uint32_t i = 0; i < conflicts.size(); ++i) {
    const Edge e{conflicts[i].first, conflicts[i].second};
    if (!std::binary_search(recorded.begin(), recorded.end(), e)) wanted.emplace_back(e, i);
  }
  // By edge, and for each edge the conflict the sweep met first: of the second command's
  // accesses the first (a command's conflicts come access by access), and of that access's
  // conflicts the first (they come in the order it met them).
  const std::uint64_t n = plan.size();
  radix_sort(wanted, [&](const auto& w) { return std::uint64_t{conflicts[w.second].second_access}; });
  radix_sort(wanted, [n](const auto& w) { return w.first.parent * n + w.first.child; });
  std::vector<InferredEdge>& inferred = plan.hazards.inferred;
  inferred.reserve(wanted.size());
  for (std::size_t i = 0; i < wanted.size(); ++i) {
    if (i > 0 && wanted[i].first == wanted[i - 1].first) continue;
    inferred.push_back({wanted[i].first, conflicts[wanted[i].second].first_access});
  }
  const auto recorded_count = static_cast<std::ptrdiff_t>(edges.size());
  for (const InferredEdge& e : inferred) edges.push_back(e.edge);
  std::inplace_merge(edges.begin(), edges.begin() + recorded_count, edges.end());
}

namespace {

struct Validation {
  std::size_t validated = 0;  // conflicting pairs found ordered
  std::vector<Conflict> unordered;
};

// The immediate conflicts of `plan` over `access`, swept in validation order: each is ordered
// (counted) or not (listed). Most are answered by the edges among the commands of their
// cluster (ClusterReach), the rest in whole-plan passes (plan/reach.hpp).
Validation check_edges(const Plan& plan, const AccessLists& access) {
  Validation result;
  const std::vector<std::uint32_t> order = validation_order(plan);
  // Every edge, not only those the reduction kept: a careful hand's edge from the last
  // command that touched a buffer is often implied through another buffer's commands, and
  // then the path among the buffer's own commands would be lost.
  std::vector<std::pair<std::uint32_t, std::uint32_t>> up;
  up.reserve(plan.dag->edges.size());
  for (const Edge& e : plan.dag->edges) up.emplace_back(e.child, e.parent);
  const Adjacency parents = Adjacency::from_pairs(plan.size(), up);
  const std::vector<Conflict> conflicts = immediate_conflicts(access, order, &parents);
  std::vector<Edge> questions;
  std::vector<std::uint32_t> asked;  // by question: its conflict
  for (std::uint32_t i = 0; i < conflicts.size(); ++i) {
    if (conflicts[i].ordered_nearby) {
      ++result.validated;
    } else {
      questions.push_back({conflicts[i].first, conflicts[i].second});
      asked.push_back(i);
    }
  }
  if (questions.empty()) return result;
  const std::vector<std::uint32_t> rank = ranks_of(order);
  std::vector<std::uint32_t> bit_of(plan.size(), Reach::no_bit), unordered;
  PassWalk walk(plan, order, rank, questions, bit_of, false);
  in_passes(questions, rank, bit_of, [&](const std::vector<std::uint32_t>& ids,
                                         std::uint32_t lo, std::uint32_t hi) {
    result.validated += walk.run(ids, lo, hi, unordered);
  });
  for (const std::uint32_t i : unordered) result.unordered.push_back(conflicts[asked[i]]);
  return result;
}

// Error(hazard) listing `unordered`, after `what` ("command buffer 'x' has" or how an update
// would leave it).
[[noreturn]] void throw_hazards(const Plan& plan, const AccessLists& access,
                                std::vector<Conflict> unordered, const std::string& what) {
  std::sort(unordered.begin(), unordered.end(), [](const Conflict& a, const Conflict& b) {
    return std::tie(a.second, a.first, a.second_access, a.first_access) <
           std::tie(b.second, b.first, b.second_access, b.first_access);
  });

  // Only the listed pairs are described and named: naming every command of 100,000 hazards,
  // each looked up among the names so far, took 25 s, and no reader goes past the first ones.
  constexpr std::size_t listed = 50;
  std::string message = what + " " + std::to_string(unordered.size()) +
                        (unordered.size() == 1 ? " hazard" : " hazards") +
                        " (commands touching the same memory, one writing, unordered):";
  std::vector<std::string> names;
  for (std::size_t k = 0; k < std::min(unordered.size(), listed); ++k) {
    message += "\n  " + describe(plan, access, unordered[k]);
    for (std::uint32_t c : {unordered[k].first, unordered[k].second}) {
      if (std::find(names.begin(), names.end(), plan.name(c)) == names.end()) {
        names.push_back(plan.name(c));
      }
    }
  }
  if (unordered.size() > listed) {
    message += "\n  and " + std::to_string(unordered.size() - listed) + " more";
  }
  throw Error(errc::hazard, message, std::move(names));
}

}  // namespace

void validate_edges(Plan& plan) {
  const AccessLists access(plan);
  Validation v = check_edges(plan, access);
  if (!v.unordered.empty()) {
    throw_hazards(plan, access, std::move(v.unordered),
                  "command buffer '" + plan.buffer_name + "' has");
  }
  plan.hazards.validated = v.validated;
}

std::vector<Edge> unneeded_edges(const Plan& plan) {
  if (plan.hazards.applied != Hazards::validate) return {};
  const AccessLists access(plan);
  const std::vector<std::uint32_t> order = validation_order(plan);
  const std::vector<Conflict> conflicts = immediate_conflicts(access, order);
  std::vector<Edge> questions;
  questions.reserve(conflicts.size());
  for (const Conflict& k : conflicts) questions.push_back({k.first, k.second});
  const std::vector<std::uint32_t> rank = ranks_of(order);
  std::vector<std::uint32_t> bit_of(plan.size(), Reach::no_bit), unordered;
  PassWalk walk(plan, order, rank, questions, bit_of, true);
  in_passes(questions, rank, bit_of, [&](const std::vector<std::uint32_t>& ids,
                                         std::uint32_t lo, std::uint32_t hi) {
    walk.run(ids, lo, hi, unordered);
  });
  std::vector<Edge> unneeded;
  for (std::uint32_t v = 0; v < plan.size(); ++v) {
    if (access[v].empty()) continue;
    const auto children = plan.dag->children[v];
    for (std::size_t e = 0; e < children.size(); ++e) {
      if (!walk.needed(plan.dag->children.first_edge(v) + e) && !access[children[e]].empty()) {
        unneeded.push_back({v, children[e]});
      }
    }
  }
  return unneeded;
}

void validate_transient_edges(Plan& plan) {
  if (plan.memory.empty()) return;
  std::vector<std::vector<MemoryAccess>> lists(plan.size());
  for (std::uint32_t c = 0; c < plan.size(); ++c) {
    for (const MemoryAccess& a : plan.access_of(c)) {
      if (plan.memory.find(a.begin) != TransientMemory::none) lists[c].push_back(a);
    }
  }
  const AccessLists access(plan, lists);
  Validation v = check_edges(plan, access);
  if (!v.unordered.empty()) {
    throw_hazards(plan, access, std::move(v.unordered),
                  "command buffer '" + plan.buffer_name + "' has");
  }
}

void check_changed_access(const Plan& plan, std::uint32_t c, std::vector<MemoryAccess> access) {
  if (plan.hazards.applied == Hazards::off) return;
  for (MemoryAccess& a : access) a.label = label_of(plan, a.origin);
  const AccessLists changed(plan, c, access);
  const std::string who = "update of command '" + plan.name(c) + "'";
  if (plan.hazards.applied == Hazards::validate) {
    Validation v = check_edges(plan, changed);
    if (!v.unordered.empty()) {
      throw_hazards(plan, changed, std::move(v.unordered), who + " would leave");
    }
  } else if (plan.hazards.applied == Hazards::infer) {
    std::vector<std::uint32_t> recording_order(plan.size());
    std::iota(recording_order.begin(), recording_order.end(), 0u);
    std::vector<Conflict> conflicts = immediate_conflicts(changed, recording_order);
    in_sweep_order(conflicts, recording_order);
    for (const Conflict& k : conflicts) {
      const std::vector<Edge>& edges = plan.dag->edges;
      if (!std::binary_search(edges.begin(), edges.end(), Edge{k.first, k.second})) {
        throw Error(errc::update_refused,
                    who + ": what it touches then needs an edge the inferred ones lack ('" +
                        plan.name(k.first) + "' before '" + plan.name(k.second) +
                        "'); re-record the buffer and update(CommandBuffer&)",
                    {plan.name(k.first), plan.name(k.second)});
      }
    }
  }
}

}  // namespace cmdgraph::detail
