// The memory operations' payloads (write_value, wait_value): one 32- or 64-bit value written
// or waited for in memory a GPU reaches directly.
#pragma once

#include "command/argument_store.hpp"
#include "command/kind_traits.hpp"
#include "command/memory_access.hpp"

#include <vector>

namespace cmdgraph::detail {

class UpdateSite;  // command/update_site.hpp
class RecordSite;  // command/record_site.hpp

/// What every memory operation stores: one value written or waited for (ValueSpec). Each
/// kind's recording hook is `{ValueOp::recorded(site, values, waits)}`.
struct ValueOp {
  ArgumentStore::Slot spec;  // ValueSpec
  static ValueOp recorded(RecordSite& site, const CommandValues& values, bool waits);
  /// A new target and value; a wait keeps its comparison.
  void update(UpdateSite& site, const CommandValues& values) const;
  /// A write writes its target, a wait reads it.
  void implied_access(const ArgumentStore& values, std::vector<MemoryAccess>& out) const;
  bool operator==(const ValueOp&) const = default;
};

struct WriteValuePayload : ValueOp {
  static constexpr KindTraits traits{.kind = CommandKind::write_value, .name = "write_value",
                                     .dot_shape = "rarrow", .updatable = true,
                                     .in_device_loop = false, .pinned_or_device = true};
  static WriteValuePayload record(RecordSite& site, const CommandValues& values) {
    return {recorded(site, values, false)};
  }
  bool operator==(const WriteValuePayload&) const = default;
};

struct WaitValuePayload : ValueOp {
  static constexpr KindTraits traits{.kind = CommandKind::wait_value, .name = "wait_value",
                                     .dot_shape = "larrow", .updatable = true,
                                     .in_device_loop = false, .pinned_or_device = true};
  static WaitValuePayload record(RecordSite& site, const CommandValues& values) {
    return {recorded(site, values, true)};
  }
  bool operator==(const WaitValuePayload&) const = default;
};

}  // namespace cmdgraph::detail
