// UpdateSite: what a payload's update hook may use while it checks and writes the new values
// of one command of an executable. The face above the backends (run/) provides it; the hooks
// (command/kind_hooks.cpp) hold each kind's rules, so update itself names no kind.
#pragma once

#include "command/argument_store.hpp"
#include "command/memory_access.hpp"

#include <cmdgraph/detail/specs.hpp>

#include <string>
#include <vector>

namespace cmdgraph::detail {

class UpdateSite {
 public:
  virtual ~UpdateSite() = default;
  /// The executable's values, as its next launches read them.
  virtual const ArgumentStore& values() const = 0;
  /// Throws Error(invalid_argument) naming the command unless `problem` is empty.
  virtual void require(const std::string& problem) const = 0;
  /// Throws, naming the command, unless the executable's device can reach `range`.
  virtual void require_reachable(const MemoryRange& range) const = 0;
  /// Throws when the command, touching `access` from now on, would race with a command the
  /// plan does not order it against.
  virtual void require_access(std::vector<MemoryAccess> access) const = 0;
  /// Throws when `bytes` bytes at `data` reach transient memory the command may not use.
  virtual void require_transient_fit(const void* data, std::size_t bytes) const = 0;
  /// Writes `value` (of the slot's size) into `slot`; its words into transients are bound to
  /// where the executable placed them. Written values are restored when apply() fails.
  virtual void write(ArgumentStore::Slot slot, const void* value) = 0;
  /// Makes the written values take effect for the next launches; on failure, restores them
  /// and rethrows.
  virtual void apply() = 0;
  /// Throws Error(update_refused): the executable cannot take the update in place, because
  /// `why` (CUDA's refusal `cuda_status`, where there is one).
  [[noreturn]] virtual void refuse(const std::string& why, int cuda_status) const = 0;
};

}  // namespace cmdgraph::detail
