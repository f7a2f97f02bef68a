// Transient memory in a plan (CommandBuffer::alloc): which words of the recorded values point
// into which transient (what an executable rewrites once it has placed them), the checks that
// every command touching a transient runs between its allocation and its free, and the arena
// layout the streams and host backends place transients by.
#pragma once

#include "command/argument_store.hpp"
#include "command/memory_access.hpp"
#include "command/transient_range.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace cmdgraph::detail {

struct Plan;

/// One alloc command of a plan and what became of it.
struct TransientInfo {
  std::uint32_t alloc;                          // the alloc command
  std::uint32_t release;                        // its free command, or TransientMemory::none
  std::shared_ptr<const TransientRange> range;  // the placeholder
  std::size_t offset = 0;                       // its place in the arena
  std::string name;  // the alloc command's, which the access to the transient is labelled by
};

/// A pointer-sized word of an argument store that points into a transient: an executable
/// writes the transient's address plus `delta` there.
struct TransientSite {
  ArgumentStore::Slot slot;
  std::uint32_t offset;     // bytes into the slot
  std::uint32_t transient;  // index into TransientMemory::list
  std::uint64_t delta;      // bytes past the transient's start (its size: one past the end)
};

/// A command whose values reach a transient.
struct TransientUse {
  std::uint32_t command;
  std::uint32_t transient;
  friend auto operator<=>(const TransientUse&, const TransientUse&) = default;
};

struct TransientMemory {
  static constexpr std::uint32_t none = ~0u;
  /// Arena offsets are multiples of this (CUDA's allocation alignment).
  static constexpr std::size_t alignment = 256;

  std::vector<TransientInfo> list;   // by alloc command
  std::vector<std::uint32_t> by_base;  // indices into `list` by placeholder address
  std::vector<TransientSite> sites;  // in the plan's own values, by slot and offset
  std::vector<TransientUse> uses;    // sorted
  std::vector<std::uint32_t> by_release;  // indices into `list` of those freed, by free command
  std::size_t arena_bytes = 0;       // what the layout takes (0 without transients)
  std::size_t layout_steps = 0;      // edges and pieces the layout examined (tests: linear)

  bool empty() const noexcept { return list.empty(); }
  /// The transient whose placeholder `word` points into (or one past), or none.
  std::uint32_t find(std::uintptr_t word) const noexcept;
  /// The transient command `c` allocates or frees, or none.
  std::uint32_t allocated_by(std::uint32_t c) const noexcept;
  std::uint32_t released_by(std::uint32_t c) const noexcept;
  /// Bytes transient `t` takes in the arena (its size rounded up to `alignment`).
  std::size_t footprint(std::uint32_t t) const noexcept;
};

/// Finds `plan`'s transients and the words of its own commands' values that point into them
/// (bodies are plans of their own and allocate none). Throws, naming the command, for a word
/// pointing into transient memory the plan does not allocate: Error(foreign_handle) at the top,
/// Error(unsupported) in a `body` (transient memory is used where it is allocated).
void collect_transients(Plan& plan, bool body);
/// Appends to `out` what command `c` of `plan` touches of transient memory through its values,
/// and labels the transient accesses of `out` from `from` on (c's: allocation, free, uses)
/// with the name of the alloc command when they have none.
void add_transient_access(const Plan& plan, std::uint32_t c, std::vector<MemoryAccess>& out,
                          std::size_t from);
/// On an ordered plan whose accesses to transient memory are all ordered with its allocation
/// and free: Error(hazard) naming both commands for a command touching a transient before its
/// allocation or after its free, or a free before its allocation. Then lays out the arena.
void check_transients(Plan& plan);
/// How lay_out_arena lays out: the smaller of the sweep and greedy by size (greedy only for
/// at most `greedy_transients`), or the sweep alone (tests of its own validity).
enum class ArenaLayout { smaller, sweep };
inline constexpr std::size_t greedy_transients = 64;
/// Lays out the arena of an ordered plan whose transients passed check_transients and the
/// hazard analysis (a path from each allocation to its free): two transients share bytes only
/// when one's free reaches the other's allocation. One sweep of the topological order, best
/// fit at each allocation among the bytes of transients whose free a search back from it
/// finds (a bounded number of steps an allocation), so linear in the plan's size; plans of few
/// transients are also laid out greedy by size over exact reachability, the smaller kept
/// (plan/arena_layout.cpp).
void lay_out_arena(Plan& plan, ArenaLayout how = ArenaLayout::smaller);

/// Names, in an error, what gave a value (e.g. "update of command 'k'"): made only when an
/// error is thrown, since updates check every value they take.
using Describe = std::function<std::string()>;

/// The words of `values` in slots [first, first + count) that point into `memory`'s
/// transients, for command `c` (after an update wrote them). Words pointing into transient
/// memory of another plan throw Error(foreign_handle), naming `who`.
std::vector<TransientSite> find_sites(const TransientMemory& memory, const ArgumentStore& values,
                                      ArgumentStore::Slot first, std::uint32_t count,
                                      const Describe& who);
/// As find_sites, over bytes not yet stored: `bytes` bytes at `data` (8-byte aligned when it
/// may hold pointers), returning the transients they reach.
std::vector<std::uint32_t> transients_reached(const TransientMemory& memory, const void* data,
                                              std::size_t bytes, const Describe& who);
/// Before an update makes command `c` of `plan` reach transient `t`: Error(hazard) unless `c`
/// runs after its allocation and before its free (a path of edges each way). `who` names the
/// update in the message.
void require_within_lifetime(const Plan& plan, std::uint32_t c, std::uint32_t t,
                             const Describe& who);

}  // namespace cmdgraph::detail
