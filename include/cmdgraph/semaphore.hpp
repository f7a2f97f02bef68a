// TimelineSemaphore: a 64-bit value that only grows; queues wait for and signal values, on the
// GPU without a host round trip.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

namespace cmdgraph {

namespace detail {
class SemaphoreState;
struct Access;
}

/// Vulkan's timeline semaphore. Its value starts at `initial` and only grows. A submission can
/// wait until it reaches a value and signal (set) a value when done; the host can do both too.
/// Lives in memory every device and the host can reach (mapped pinned memory with CUDA), so a
/// CUDA queue waits with a stream memory operation, not a host callback. Thread-safe.
class TimelineSemaphore {
 public:
  /// A semaphore whose value starts at `initial`. Throws Error(out_of_memory) or
  /// Error(cuda_error) when its memory cannot be allocated.
  explicit TimelineSemaphore(std::uint64_t initial = 0);
  /// Moves the semaphore; using the moved-from one throws Error(invalid_handle).
  TimelineSemaphore(TimelineSemaphore&&) noexcept = default;
  /// Moves the semaphore, as the move constructor.
  TimelineSemaphore& operator=(TimelineSemaphore&&) noexcept = default;
  ~TimelineSemaphore();

  /// The current value.
  std::uint64_t value() const;
  /// Sets the value from the host. Throws Error(invalid_argument) if `value` is below the
  /// current one, or not below every signal a submission has pending (Vulkan's rule: when
  /// that lands, the value would fall back). Signalling below a pending signal is how the host
  /// releases a submission that waits before it signals.
  void signal(std::uint64_t value);
  /// Blocks until the value is at least `value`, at most `timeout`; false when it ran out.
  bool wait(std::uint64_t value, std::chrono::nanoseconds timeout) const;
  /// Blocks until the value is at least `value`.
  void wait(std::uint64_t value) const;

 private:
  friend struct detail::Access;
  std::shared_ptr<detail::SemaphoreState> state_;
};

/// A semaphore and a value, for SubmitInfo. Shares the semaphore's state, as Vulkan keeps a
/// semaphore alive while a submission uses it: the TimelineSemaphore object may be moved,
/// destroyed or reallocated (in a growing vector) while the submission waits or signals.
struct SemaphoreValue {
  /// `semaphore_` at `value_`; the submission keeps the semaphore's state alive.
  /// \pre `semaphore_` was not moved from (else the submission throws Error(invalid_handle)).
  SemaphoreValue(const TimelineSemaphore& semaphore_, std::uint64_t value_);
  std::shared_ptr<detail::SemaphoreState> semaphore;  ///< null for a moved-from semaphore
  /// The value waited for or signalled.
  std::uint64_t value;
};

/// What a submission waits for before it runs and signals after it finished.
struct SubmitInfo {
  /// Values the submission waits for before it runs.
  std::vector<SemaphoreValue> wait = {};
  /// Values it signals once it finished: for each semaphore, above the values signalled by
  /// earlier submissions and above any value this submission waits for on it (else the launch
  /// throws Error(invalid_argument) and submits nothing).
  std::vector<SemaphoreValue> signal = {};
};

}  // namespace cmdgraph
