// EventState: what an Event is on its device. On a CUDA device, a cudaEvent_t and whether it
// was ever recorded (CUDA reports a never-recorded event as complete). On the host device, a
// generation counter: a wait is satisfied once the most recent record begun before it has
// finished; timed host events keep the time of each finished record.
#pragma once

#include "sync/threshold_waiters.hpp"

#include <cmdgraph/detail/native.hpp>
#include <cmdgraph/device.hpp>

#if CMDGRAPH_HAVE_CUDA
#include "cuda/handles.hpp"
#endif

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <utility>
#include <vector>

namespace cmdgraph::detail {

class EventState {
 public:
  EventState(Device device, bool timing);
  Device device() const noexcept { return device_; }
  bool timing() const noexcept { return timing_; }
  /// The CUDA event (null on the host device).
  NativeEvent native() const noexcept;
  /// CUDA: notes that a record of this event has been enqueued.
  void note_recorded() noexcept { recorded_.store(true, std::memory_order_release); }
  bool ever_recorded() const noexcept;
  /// CUDA: true once the most recent record has been reached (a fault counts as reached).
  bool device_reached() const noexcept;

  // Host generations.
  /// A record that will finish later (e.g. queued behind other work); returns its generation.
  std::uint64_t begin_record();
  void finish_record(std::uint64_t generation);
  /// A record that happens now (a record command running on the host backend).
  void record_now() { finish_record(begin_record()); }
  /// The generation a wait issued now must see finished.
  std::uint64_t latest_begun();
  /// True when generation `target` has finished; otherwise keeps `fn` for the thread that
  /// finishes it.
  bool finished_or_defer(std::uint64_t target, std::function<void()> fn);
  /// True when the most recent record begun so far has finished (see finished_or_defer).
  bool recorded_or_defer(std::function<void()> fn) {
    return finished_or_defer(latest_begun(), std::move(fn));
  }
  /// True when generation `target` has finished.
  bool finished(std::uint64_t target) const;
  /// Blocks until generation `target` has finished.
  void wait_finished(std::uint64_t target);
  /// The time the latest finished record finished (host, timed events).
  std::chrono::steady_clock::time_point finished_at();

 private:
  Device device_;
  bool timing_;
  std::atomic<bool> recorded_{false};
#if CMDGRAPH_HAVE_CUDA
  cuda::Event native_;
#endif
  mutable std::mutex mutex_;
  std::condition_variable finished_cv_;
  std::uint64_t begun_ = 0;
  std::uint64_t finished_ = 0;
  std::chrono::steady_clock::time_point finished_at_{};
  ThresholdWaiters waiters_;
};

}  // namespace cmdgraph::detail
