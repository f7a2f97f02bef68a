// QueueState: the ordered lane behind a Queue, one of two kinds: HostQueue (jobs started one
// after another on the host pool) on the host device, CudaQueue (a non-blocking stream with a
// priority) on a CUDA device. Backends take the kind they run on.
#pragma once

#include <cmdgraph/detail/native.hpp>
#include <cmdgraph/device.hpp>
#include <cmdgraph/queue.hpp>

#include <chrono>
#include <memory>

namespace cmdgraph::detail {

class CudaQueue;
class EventState;
class FenceState;
class HostQueue;

class QueueState {
 public:
  virtual ~QueueState() = default;
  QueueState(const QueueState&) = delete;
  QueueState& operator=(const QueueState&) = delete;

  Device device() const noexcept { return device_; }
  /// The CUDA stream priority in use (0 on the host).
  int native_priority() const noexcept { return native_priority_; }
  /// The CUDA stream (null on the host device).
  virtual NativeStream stream() const noexcept { return nullptr; }

  /// Later work waits for `event`'s most recent record submitted so far.
  virtual void wait_event(const std::shared_ptr<EventState>& event) = 0;
  /// Marks `event` after the work submitted so far.
  virtual void record_event(const std::shared_ptr<EventState>& event) = 0;
  /// Blocks until everything submitted has finished; rethrows the first error since the
  /// previous wait.
  virtual void wait() = 0;
  virtual bool wait_for(std::chrono::nanoseconds timeout) = 0;
  /// Waits for everything submitted so far, reporting nothing (for destructors).
  virtual void synchronize_quietly() noexcept = 0;
  /// Device fences: records `fence`'s completion marker now if it still waits for one.
  virtual void mark(FenceState& fence);

  /// This queue as the kind a backend runs on, or null.
  virtual HostQueue* as_host() noexcept { return nullptr; }
  virtual CudaQueue* as_cuda() noexcept { return nullptr; }

 protected:
  QueueState(Device device, int native_priority) : device_(device), native_priority_(native_priority) {}

 private:
  Device device_;
  int native_priority_;
};

/// A queue on `device` with `priority`, or with an explicit CUDA stream priority clamped to
/// the device's range (ignored on the host).
std::shared_ptr<QueueState> make_queue(Device device, Priority priority);
std::shared_ptr<QueueState> make_queue(Device device, int native_priority);

}  // namespace cmdgraph::detail
