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
  /// current one or below a signal already submitted.
  void signal(std::uint64_t value);
  /// Blocks until the value is at least `value`, at most `timeout`; false when it ran out.
  bool wait(std::uint64_t value, std::chrono::nanoseconds timeout) const;
  /// Blocks until the value is at least `value`.
  void wait(std::uint64_t value) const;

  /// The shared state, for the library's own use.
  const std::shared_ptr<detail::SemaphoreState>& state() const noexcept { return state_; }

 private:
  std::shared_ptr<detail::SemaphoreState> state_;
};

/// A semaphore and a value, for SubmitInfo.
struct SemaphoreValue {
  /// `semaphore_` at `value_`. \pre The semaphore outlives the submission's wait or signal.
  SemaphoreValue(TimelineSemaphore& semaphore_, std::uint64_t value_)
      : semaphore(&semaphore_), value(value_) {}
  /// The semaphore (not owned).
  TimelineSemaphore* semaphore;
  /// The value waited for or signalled.
  std::uint64_t value;
};

/// What a submission waits for before it runs and signals after it finished.
struct SubmitInfo {
  /// Values the submission waits for before it runs.
  std::vector<SemaphoreValue> wait = {};
  /// Values it signals once it finished.
  std::vector<SemaphoreValue> signal = {};
};

}  // namespace cmdgraph
