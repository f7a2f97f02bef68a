// The payloads of transient memory (alloc, free): a range each executable places anew, valid
// from its allocation to its free.
#pragma once

#include "command/argument_store.hpp"
#include "command/kind_traits.hpp"
#include "command/memory_access.hpp"
#include "command/transient_range.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace cmdgraph::detail {

/// Transient memory (CommandBuffer::alloc): valid from this command to its free, or to the end
/// of the launch. Commands reach it through the placeholder `memory`, which each executable
/// rewrites to where it placed the memory (plan/transients).
struct AllocPayload {
  static constexpr KindTraits traits{.kind = CommandKind::alloc, .name = "alloc",
                                     .dot_shape = "invhouse", .weight = 0,
                                     .in_device_loop = false};
  std::shared_ptr<const TransientRange> memory;
  const std::shared_ptr<const TransientRange>& allocated() const noexcept { return memory; }
  /// Writes all of it: nothing may touch it before.
  void implied_access(const ArgumentStore& values, std::vector<MemoryAccess>& out) const;
  bool operator==(const AllocPayload&) const = default;
};

struct FreePayload {
  static constexpr KindTraits traits{.kind = CommandKind::free, .name = "free",
                                     .dot_shape = "house", .weight = 0, .in_device_loop = false};
  std::shared_ptr<const TransientRange> memory;
  std::uint32_t alloc;  // the command that allocated it
  std::optional<std::uint32_t> freed_allocation() const noexcept { return alloc; }
  /// Writes all of it: nothing may touch it after.
  void implied_access(const ArgumentStore& values, std::vector<MemoryAccess>& out) const;
  bool operator==(const FreePayload&) const = default;
};

}  // namespace cmdgraph::detail
