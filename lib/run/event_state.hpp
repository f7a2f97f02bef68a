// EventState: what an Event is on its device. On a CUDA device, a cudaEvent_t. On the host
// device, a generation counter: a wait is satisfied once the most recent record begun before
// it has finished.
#pragma once

#include <cmdgraph/detail/native.hpp>
#include <cmdgraph/device.hpp>

#if CMDGRAPH_HAVE_CUDA
#include "cuda/handles.hpp"
#endif

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

  /// A record that will finish later (e.g. queued behind other work); returns its generation.
  std::uint64_t begin_record();
  void finish_record(std::uint64_t generation);
  /// A record that happens now (a record command running on the host backend).
  void record_now() { finish_record(begin_record()); }
  /// True when the most recent record begun so far has finished; otherwise keeps `fn` and
  /// runs it on the thread that finishes that record.
  bool recorded_or_defer(std::function<void()> fn);

 private:
  Device device_;
  bool timing_;
#if CMDGRAPH_HAVE_CUDA
  cuda::Event native_;
#endif
  std::mutex mutex_;
  std::uint64_t begun_ = 0;
  std::uint64_t finished_ = 0;
  std::vector<std::pair<std::uint64_t, std::function<void()>>> waiters_;
};

}  // namespace cmdgraph::detail
