// ExecutableValues: the values an executable's launches read. Its plan's store, shared (the
// recording's own, so record, plan and executable hold one copy) until the executable writes:
// an update, or its transients bound where it placed them. Then a copy of its own, copied again
// only when launches in flight still hold the store it would write.
#pragma once

#include "command/argument_store.hpp"

#include <atomic>
#include <cstdint>
#include <memory>

namespace cmdgraph::detail {

class ExecutableValues {
 public:
  /// Shares `values`; every copy made later keeps `keep` alive as long as a launch holds it
  /// (the host backend's arena, which the copy's words point into).
  explicit ExecutableValues(std::shared_ptr<const ArgumentStore> values,
                            std::shared_ptr<void> keep = nullptr)
      : current_(std::move(values)), keep_(std::move(keep)) {}

  /// The values, to read or for a launch to hold.
  const ArgumentStore& read() const noexcept { return *current_; }
  const std::shared_ptr<const ArgumentStore>& shared() const noexcept { return current_; }
  /// The values to write into: this executable's own, held by no launch (copied first when
  /// they are not). References from read() taken before may then name the old store.
  ArgumentStore& writable() {
    if (!own_ || current_.use_count() > 1) {
      auto copy = std::make_unique<ArgumentStore>(*current_);
      own_ = copy.get();
      own_id_ = next_copy_id.fetch_add(1, std::memory_order_relaxed);
      current_ = std::shared_ptr<ArgumentStore>(copy.release(),
                                                [keep = keep_](ArgumentStore* s) { delete s; });
    }
    return *own_;
  }
  /// Names the copy writable() returned last, never another, in this process: a copy may be
  /// made at a freed one's address, so an address does not tell them apart.
  std::uint64_t own_id() const noexcept { return own_id_; }

 private:
  static inline std::atomic<std::uint64_t> next_copy_id{1};
  std::shared_ptr<const ArgumentStore> current_;
  ArgumentStore* own_ = nullptr;  // current_, when it is this executable's own copy
  std::uint64_t own_id_ = 0;      // 0: none made
  std::shared_ptr<void> keep_;
};

}  // namespace cmdgraph::detail
