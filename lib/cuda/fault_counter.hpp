// What a door's fault injection counts: the calls since a test armed it, and which one fails
// with which code (0, cudaSuccess and CUPTI_SUCCESS alike, is success).
#pragma once

#include <atomic>
#include <cstdint>

namespace cmdgraph::detail::cuda {

class FaultCounter {
 public:
  /// `armed`: the door's flag, which it reads on every call before asking next().
  explicit FaultCounter(std::atomic<bool>& armed) noexcept : armed_(armed) {}
  /// Counts the current call; the code it should fail with, or 0.
  int next() noexcept {
    const std::uint64_t n = counted_.fetch_add(1, std::memory_order_relaxed) + 1;
    return n == fail_at_.load(std::memory_order_relaxed)
               ? fail_with_.load(std::memory_order_relaxed)
               : 0;
  }
  /// The `nth` call (1-based) from now fails with `code`; earlier and later calls run. With
  /// `nth` 0 none fails: calls are counted.
  void fail_call(std::uint64_t nth, int code) noexcept {
    counted_ = 0;
    fail_with_ = code;
    fail_at_ = nth;
    armed_ = true;
  }
  /// Stops counting and failing.
  void disarm() noexcept {
    armed_ = false;
    fail_at_ = 0;
  }
  /// Calls counted since the last fail_call.
  std::uint64_t calls() const noexcept { return counted_.load(); }

 private:
  std::atomic<bool>& armed_;
  std::atomic<std::uint64_t> counted_{0};
  std::atomic<std::uint64_t> fail_at_{0};  // 0: never
  std::atomic<int> fail_with_{0};
};

}  // namespace cmdgraph::detail::cuda
