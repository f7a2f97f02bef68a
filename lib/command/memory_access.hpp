// MemoryAccess: one range of memory a command reads or writes, as the hazard analysis sees it.
// Declared by reads()/writes() on kernels, parallel_for, host tasks and captures; implied by
// what copies and fills store, and by the commands of executed buffers and bodies.
#pragma once

#include <cmdgraph/command.hpp>
#include <cmdgraph/detail/specs.hpp>

#include <cstdint>
#include <string>

namespace cmdgraph::detail {

struct MemoryAccess {
  std::uintptr_t begin = 0, end = 0;  // the bytes touched: [begin, end)
  std::uintptr_t origin = 0;          // where the view was cut from: element ranges count here
  std::uint32_t element_size = 1;
  AccessMode mode = AccessMode::read;
  std::string label;                  // the user's, or empty

  bool writes() const noexcept { return (static_cast<unsigned>(mode) & 2u) != 0; }
  bool reads() const noexcept { return (static_cast<unsigned>(mode) & 1u) != 0; }
  /// The label, else the origin's address: what errors and DOT call the memory.
  std::string name() const;
  /// "y[0, 4096)" (the label, else the origin's address, then elements from the origin).
  std::string describe() const;
  /// The same for the part [from, to) of it.
  std::string describe(std::uintptr_t from, std::uintptr_t to) const;
};

/// How a command touching `range` that way touches it (copies and fills, from their specs).
MemoryAccess access_of(const MemoryRange& range, AccessMode mode);

/// "reads", "writes" or "reads and writes".
const char* verb(AccessMode mode) noexcept;

}  // namespace cmdgraph::detail
