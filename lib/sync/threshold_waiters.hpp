// ThresholdWaiters: callbacks each waiting for a growing counter to reach its value, shared by
// events (record generations) and timeline semaphores (values). The owner's mutex guards it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

namespace cmdgraph::detail {

class ThresholdWaiters {
 public:
  void add(std::uint64_t value, std::function<void()> fn) {
    waiters_.emplace_back(value, std::move(fn));
  }

  /// Removes and returns the callbacks waiting for at most `reached`, for the caller to run
  /// once it has released its lock.
  std::vector<std::function<void()>> take_reached(std::uint64_t reached) {
    const auto done = std::partition(waiters_.begin(), waiters_.end(),
                                     [&](const auto& w) { return w.first > reached; });
    std::vector<std::function<void()>> ready;
    for (auto it = done; it != waiters_.end(); ++it) ready.push_back(std::move(it->second));
    waiters_.erase(done, waiters_.end());
    return ready;
  }

 private:
  std::vector<std::pair<std::uint64_t, std::function<void()>>> waiters_;
};

}  // namespace cmdgraph::detail
