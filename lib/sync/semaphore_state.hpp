// SemaphoreState: a timeline semaphore's 64-bit value in memory both the host and every CUDA
// device reach, plus the host side: waiters, and the highest value a submission will signal.
#pragma once

#include "sync/threshold_waiters.hpp"

#include <cmdgraph/semaphore.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace cmdgraph::detail {

class SemaphoreState : public std::enable_shared_from_this<SemaphoreState> {
 public:
  explicit SemaphoreState(std::uint64_t initial);
  ~SemaphoreState();
  SemaphoreState(const SemaphoreState&) = delete;
  SemaphoreState& operator=(const SemaphoreState&) = delete;

  /// Where the value lives: mapped pinned memory when CUDA works (the device writes and waits
  /// on it with stream memory operations), ordinary memory otherwise.
  std::uint64_t* address() const noexcept { return value_; }
  bool device_reachable() const noexcept { return pinned_; }

  std::uint64_t value() const noexcept;
  /// Sets the value from the host (checked to grow) and wakes host waiters.
  void signal(std::uint64_t value);
  /// Claims `value` for a submission that will signal it later: values signalled through
  /// submissions and the host must grow, in the order they are submitted. Returns the claim
  /// it replaced, for cancel_signal.
  std::uint64_t reserve_signal(std::uint64_t value);
  /// Withdraws the claim of `value` made by a submission that failed, restoring `previous`
  /// (unless a later claim replaced it since).
  void cancel_signal(std::uint64_t value, std::uint64_t previous) noexcept;
  /// A submission on a host queue reached its signal: raises the value to at least `value`.
  void advance(std::uint64_t value) noexcept;
  /// Blocks until the value is at least `value` or `deadline` passes.
  bool wait_until(std::uint64_t value, std::chrono::steady_clock::time_point deadline);
  /// Calls `fn` once the value is at least `value`: now, on the thread that signals it, or on
  /// the watcher thread that notices a device's write.
  void when_reached(std::uint64_t value, std::function<void()> fn);

 private:
  void wake(std::uint64_t value);
  std::uint64_t* value_;
  bool pinned_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::uint64_t reserved_;  // highest value signalled or claimed for a signal
  ThresholdWaiters waiters_;
};

/// Calls `fn` once every semaphore of `targets` has reached its value.
void when_all_reached(const std::vector<SemaphoreValue>& targets, std::function<void()> fn);

}  // namespace cmdgraph::detail
