// Hazards: which commands of a plan touch the same memory, one of them writing, and what
// compile() makes of it (CompileOptions::hazards): edges inferred in recording order, or a
// check that the explicit edges order every such pair. One analysis for every backend.
#pragma once

#include "command/edge.hpp"
#include "command/memory_access.hpp"
#include "command/payloads.hpp"
#include "plan/adjacency.hpp"

#include <cmdgraph/executable.hpp>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace cmdgraph::detail {

struct Plan;

/// Every command's access in a plan, or the same with one command's replaced (what an update
/// of a copy or fill would make of it).
class AccessLists {
 public:
  explicit AccessLists(const Plan& plan) : plan_(plan) {}
  AccessLists(const Plan& plan, std::uint32_t changed, std::span<const MemoryAccess> access)
      : plan_(plan), changed_(changed), replacement_(access) {}
  /// `lists[c]` in place of every command's access.
  AccessLists(const Plan& plan, const std::vector<std::vector<MemoryAccess>>& lists)
      : plan_(plan), lists_(&lists) {}
  std::span<const MemoryAccess> operator[](std::uint32_t c) const;

 private:
  const Plan& plan_;
  std::uint32_t changed_ = ~0u;
  std::span<const MemoryAccess> replacement_;
  const std::vector<std::vector<MemoryAccess>>* lists_ = nullptr;
};

/// Two commands whose accesses overlap, one of them writing. `first` comes before `second`
/// in the order the analysis swept.
struct Conflict {
  std::uint32_t first, second;                // commands
  std::uint32_t first_access, second_access;  // indices into their access lists
  std::uintptr_t begin, end;                  // the overlapping bytes
  bool ordered_nearby = false;  // a path of edges among commands of its cluster orders it
};

/// The conflicts each command has with the latest earlier commands touching the same bytes,
/// sweeping commands in `sequence`: the last writer of every part a command touches (for a
/// write, only where nobody read since) and, when it writes, the readers since. Ordering
/// each of these pairs (first before second) orders every conflicting pair: the rest follow
/// through the writers in between. The accesses are first sorted into clusters of
/// overlapping ranges, each swept on its own: a binary search per access plus a step per
/// segment it covers and per conflict (segments split at every access's ends; a write
/// collapses those it covers into one). They come cluster by cluster, so not in `sequence`
/// order; one access's conflicts come together, in the order it met them (one per earlier
/// access). in_sweep_order() puts them back in `sequence` order.
/// With the plan's `parents` (and `sequence` a topological order), a conflict is marked
/// ordered_nearby when a path of edges among the commands touching its cluster orders it
/// (plan/cluster_reach.hpp); unmarked ones may still be ordered by a path through others.
std::vector<Conflict> immediate_conflicts(const AccessLists& access,
                                          const std::vector<std::uint32_t>& sequence,
                                          const Adjacency* parents = nullptr);

/// Sorts `conflicts` (immediate_conflicts over `sequence`) by the place of their second
/// command in `sequence`, then its access, keeping the order each access met them in: the
/// order the sweep found them, access after access.
void in_sweep_order(std::vector<Conflict>& conflicts, const std::vector<std::uint32_t>& sequence);

/// The order validation sweeps `plan` in: topological, earliest recorded first among the
/// commands ready, so it is recording order wherever the edges allow. A pair it finds
/// unordered is given in this order, and an edge that way keeps the plan acyclic.
std::vector<std::uint32_t> validation_order(const Plan& plan);

/// "read-after-write", "write-after-read" or "write-after-write", as `first` then `second`.
const char* hazard_kind(const MemoryAccess& first, const MemoryAccess& second) noexcept;

/// An edge Hazards::infer added, and which access of its parent names the memory it orders.
/// (A name per edge, formatted as the edges were inferred, took a quarter of infer's time.)
struct InferredEdge {
  Edge edge;
  std::uint32_t access;  // into plan.access_of(edge.parent)
};

/// The memory inferred edge `e` of `plan` orders: "y", else the view's address.
std::string memory_of(const Plan& plan, const InferredEdge& e);

/// What the analysis did to a plan, bodies not included.
struct HazardSummary {
  Hazards requested = Hazards::automatic;  // as compile() was asked (update re-plans alike)
  Hazards applied = Hazards::off;          // what it resolved to
  std::size_t declared = 0;                // declared accesses of the plan's own commands
  std::vector<InferredEdge> inferred;      // by edge; none among the recorded ones
  std::size_t validated = 0;               // conflicting pairs found ordered
};

/// Fills every command's access in `plan` (`declared`, the recording's declarations; implied
/// by copies, fills, allocations and frees, and by values pointing into transient memory; its
/// body's for commands with one) and resolves the mode: automatic is validate when `plan` or a
/// body declares access or when `plan` allocates transient memory.
void collect_access(Plan& plan, std::span<const DeclaredAccess> declared, Hazards requested);
/// Hazards::infer: the edges that order every conflicting pair in recording order, before
/// the plan is ordered; appends them to `edges` (the plan's recorded edges, sorted and
/// distinct, its DAG's to be) and records them in plan.hazards.
void infer_edges(Plan& plan, std::vector<Edge>& edges);
/// Hazards::validate, on an ordered and reduced plan: throws Error(hazard) counting the
/// immediate conflicts no path of edges orders, listing the first 50 (both commands, what each
/// touches, the kind; Error::commands() names theirs) and how many more it left out: an edge
/// for each of them orders every conflicting pair.
void validate_edges(Plan& plan);
/// The lint of a plan validate passed (none under another mode): the kept edges between
/// commands that touch memory that lie on no path between the two commands of an immediate
/// conflict. Not part of validate_edges: it walks every pair's whole window forward and
/// back, which validation mostly need not, so it is worked out only when asked.
std::vector<Edge> unneeded_edges(const Plan& plan);
/// Hazards::off on a plan with transient memory: the check of validate_edges, over the
/// accesses to transient memory only (they are checked whatever the mode: its bytes are
/// shared by transients whose lifetimes the edges order).
void validate_transient_edges(Plan& plan);
/// Before an update gives command `c` of a compiled `plan` the access `access` (a copy's or
/// fill's new memory): under validate, Error(hazard) for pairs its edges would leave
/// unordered; under infer, Error(update_refused) when an edge it lacks would be needed.
void check_changed_access(const Plan& plan, std::uint32_t c, std::vector<MemoryAccess> access);

}  // namespace cmdgraph::detail
