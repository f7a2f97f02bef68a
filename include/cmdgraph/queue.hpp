// Queue: an ordered lane of submitted work on one device (a CUDA stream or a host lane).
#pragma once

#include <cmdgraph/detail/native.hpp>
#include <cmdgraph/device.hpp>

#include <chrono>
#include <memory>

namespace cmdgraph {

namespace detail {
class QueueState;
}

/// Urgency of a queue's work, mapped onto the device's stream priority range.
enum class Priority : unsigned char { low, normal, high };

/// Work submitted to one queue runs in submission order; work of different queues may overlap.
/// Thread-safe. Destroying a queue waits for its work (errors are then dropped).
class Queue {
 public:
  explicit Queue(Device device = Device::best(), Priority priority = Priority::normal);
  Queue(Queue&&) noexcept;
  Queue& operator=(Queue&&) noexcept;
  ~Queue();

  Device device() const noexcept;
  /// Blocks until everything submitted so far has finished; rethrows the first error of any
  /// launch finished since the last wait that its fence has not reported.
  void wait();
  /// As wait(), for at most `timeout`; false when the time ran out.
  bool wait_for(std::chrono::nanoseconds timeout);
  /// The CUDA stream behind this queue (null on the host device), for interoperation.
  NativeStream native_handle() const noexcept;

  detail::QueueState& state() const;
  const std::shared_ptr<detail::QueueState>& shared_state() const;

 private:
  std::shared_ptr<detail::QueueState> state_;
};

}  // namespace cmdgraph
