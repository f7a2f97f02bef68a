// Event: a marker recorded by one command or queue and waited on by another, and the way to
// time work between two of them.
#pragma once

#include <cmdgraph/detail/native.hpp>
#include <cmdgraph/device.hpp>

#include <chrono>
#include <memory>

namespace cmdgraph {

namespace detail {
class EventState;
struct Access;
}

/// How an Event is made.
struct EventOptions {
  /// Record timestamps, so Event::elapsed can measure between two events. Timed events cost
  /// a little more to record and wait on.
  bool timing = false;
};

/// A device-bound synchronisation marker (cudaEvent_t on CUDA). `record(event)` marks a point;
/// `wait(event)` orders later work after the most recent record made before the wait.
/// Move-only; recordings and executables that use it keep its state alive.
class Event {
 public:
  /// An event of `device`, never recorded yet (ready() is false). Throws Error(cuda_error)
  /// when CUDA cannot create it.
  explicit Event(Device device = Device::best(), EventOptions options = {});
  /// Moves the event; using the moved-from one throws Error(invalid_handle).
  Event(Event&&) noexcept = default;
  /// Moves the event, as the move constructor.
  Event& operator=(Event&&) noexcept = default;
  ~Event() = default;

  /// The device the event belongs to.
  Device device() const noexcept;
  /// Whether it records timestamps (EventOptions::timing).
  bool timing() const noexcept;
  /// True once the most recent record has been reached (false if never recorded).
  bool ready() const;
  /// Blocks until the most recent record has been reached. Throws Error(wrong_state) when the
  /// event was never recorded (no Queue::record, no launch of an executable that records
  /// it): nothing could ever make it ready, and returning would claim it was.
  void wait() const;
  /// The CUDA event (null on the host device).
  NativeEvent native_handle() const noexcept;

  /// Time from `start` to `stop`, waiting for `stop` first; never negative. Throws
  /// Error(invalid_argument) when either event was made without timing, they belong to
  /// different devices, or `stop` was reached before `start` (the arguments swapped), and
  /// Error(wrong_state) when either was never recorded.
  static std::chrono::duration<double, std::milli> elapsed(const Event& start, const Event& stop);

 private:
  friend struct detail::Access;
  std::shared_ptr<detail::EventState> state_;
};

}  // namespace cmdgraph
