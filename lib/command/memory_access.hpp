// MemoryAccess: one range of memory a command reads or writes, as the hazard analysis sees it.
// Declared by reads()/writes() on kernels, parallel_for, host tasks and captures; implied by
// what copies and fills store, and by the commands of executed buffers and bodies.
#pragma once

#include <cmdgraph/command.hpp>
#include <cmdgraph/detail/specs.hpp>

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>

namespace cmdgraph::detail {

/// What an access to transient memory (CommandBuffer::alloc) is to its lifetime.
enum class TransientRole : unsigned char {
  none,        ///< not an access to transient memory, or a declared one
  allocation,  ///< the alloc command: writes all of it first
  use,         ///< a command whose arguments point into it
  release,     ///< the free command: writes all of it last
};

struct MemoryAccess {
  std::uintptr_t begin = 0, end = 0;  // the bytes touched: [begin, end)
  std::uintptr_t origin = 0;          // where the view was cut from: element ranges count here
  std::uint32_t element_size = 1;
  AccessMode mode = AccessMode::read;
  TransientRole role = TransientRole::none;
  const std::string* label = nullptr; // the user's (its recording's LabelStore), or none

  bool writes() const noexcept { return (static_cast<unsigned>(mode) & 2u) != 0; }
  bool reads() const noexcept { return (static_cast<unsigned>(mode) & 1u) != 0; }
  /// The label, else the origin's address: what errors and DOT call the memory.
  std::string name() const;
  /// "y[0, 4096)" (the label, else the origin's address, then elements from the origin).
  std::string describe() const;
  /// The same for the part [from, to) of it.
  std::string describe(std::uintptr_t from, std::uintptr_t to) const;
};

// Plans and recordings hold tens of thousands of accesses: copying them must be plain bytes.
static_assert(std::is_trivially_copyable_v<MemoryAccess> && sizeof(MemoryAccess) <= 40);

/// The labels of a recording's declarations, each kept once. An access points at its label
/// rather than holding a copy, so accesses copy as plain bytes; every plan built from the
/// recording shares the store, so the labels live as long as any access pointing at them.
class LabelStore {
 public:
  /// The kept copy of `text`, which lives as long as the store.
  const std::string* keep(std::string_view text);

 private:
  std::deque<std::string> labels_;  // a deque: growing it never moves the strings pointed at
  std::unordered_map<std::string_view, const std::string*> kept_;  // views into labels_
};

/// One reads()/writes() of command `command`. A recording keeps its declarations in one list,
/// in the order made, not a list per command: thousands of small per-command lists cost more
/// to grow, copy into the plan and free than the analysis that reads them.
struct DeclaredAccess {
  std::uint32_t command;
  MemoryAccess access;
};

/// How a command touching `range` that way touches it (copies and fills, from their specs).
MemoryAccess access_of(const MemoryRange& range, AccessMode mode);

class TransientRange;
/// How a command whose arguments point into transient memory `range` touches it, whatever
/// else it declares: it reads all of it, so it falls between the allocation and the free.
MemoryAccess transient_use(const TransientRange& range);

/// "reads", "writes" or "reads and writes".
const char* verb(AccessMode mode) noexcept;

}  // namespace cmdgraph::detail
