// Queue: an ordered lane of submitted work on one device (a CUDA stream or a host lane), with
// a priority; QueuePool: a bounded set of queues per priority handed out round-robin.
#pragma once

#include <cmdgraph/detail/native.hpp>
#include <cmdgraph/device.hpp>
#include <cmdgraph/fence.hpp>
#include <cmdgraph/priority.hpp>
#include <cmdgraph/semaphore.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <vector>

namespace cmdgraph {

namespace detail {
class QueueState;
struct Access;
}

class Event;
class Executable;

/// Work submitted to one queue runs in submission order; work of different queues may overlap.
/// Thread-safe. Destroying a queue waits for its work (errors are then dropped).
class Queue {
 public:
  /// A queue of `device` whose work has `priority`. Throws Error(cuda_error) when CUDA cannot
  /// create its stream.
  explicit Queue(Device device = Device::best(), Priority priority = Priority::normal);
  /// A queue with an explicit CUDA stream priority, clamped to the device's range
  /// (numerically smaller is more urgent on CUDA; ignored on the host).
  Queue(Device device, int native_priority);
  /// Moves the queue; using the moved-from one throws Error(invalid_handle).
  Queue(Queue&&) noexcept;
  /// Moves the queue, as the move constructor.
  Queue& operator=(Queue&&) noexcept;
  ~Queue();

  /// The device its work runs on.
  Device device() const noexcept;
  /// The stream priority in use (0 on the host).
  int native_priority() const noexcept;

  /// Runs `executable` after everything submitted so far and after waiting for every
  /// `info.wait` value; signals every `info.signal` value once it finished. Returns at once.
  Fence submit(Executable& executable, const SubmitInfo& info = {});
  /// Later work on this queue waits for the most recent record of `event` made before now.
  void wait(const Event& event);
  /// Marks `event` once the work submitted so far has finished.
  void record(Event& event);

  /// Blocks until everything submitted so far has finished; rethrows the first error of any
  /// launch since the previous wait of this queue, whether or not that launch's fence has
  /// reported it already (errors are never used up; the next queue wait starts afresh).
  void wait();
  /// As wait(), for at most `timeout`; false when the time ran out.
  bool wait_for(std::chrono::nanoseconds timeout);
  /// The CUDA stream behind this queue (null on the host device), for interoperation.
  NativeStream native_handle() const noexcept;

 private:
  friend struct detail::Access;
  std::shared_ptr<detail::QueueState> state_;
};

/// A fixed set of queues per priority, handed out round-robin. Bounded on purpose: each
/// stream costs hardware queue slots and context switches; beyond a few per priority they
/// only add contention. Priorities act only between streams on different hardware queues:
/// keep 3 x queues_per_priority (plus other streams) within CUDA_DEVICE_MAX_CONNECTIONS (8 by
/// default, up to 32; set it in the environment before CUDA starts). Thread-safe; the pool
/// owns its queues.
class QueuePool {
 public:
  /// The most queues per priority a pool holds.
  static constexpr std::size_t max_queues_per_priority = 256;
  /// `queues_per_priority` queues of each priority on `device`. Throws Error(invalid_argument)
  /// unless 1 <= queues_per_priority <= max_queues_per_priority.
  explicit QueuePool(Device device = Device::best(), std::size_t queues_per_priority = 2);

  /// The next queue of `priority`, round-robin. Valid while the pool lives. Throws
  /// Error(invalid_argument) for a value that is not a Priority enumerator.
  Queue& acquire(Priority priority);
  /// Queues of each priority, as constructed.
  std::size_t queues_per_priority() const noexcept { return per_priority_; }
  /// The device of every queue in the pool.
  Device device() const noexcept { return device_; }
  /// Waits for every queue of the pool; rethrows the first error.
  void wait();

 private:
  Device device_;
  std::size_t per_priority_;
  std::array<std::vector<Queue>, 3> queues_;
  std::array<std::atomic<std::size_t>, 3> next_{};
};

}  // namespace cmdgraph
