// EventState: what an Event is on its device. On the host device, a generation counter: a
// wait is satisfied once the most recent record begun before it has finished.
#pragma once

#include <cmdgraph/device.hpp>

#include <cstdint>
#include <functional>
#include <mutex>
#include <utility>
#include <vector>

namespace cmdgraph::detail {

class EventState {
 public:
  explicit EventState(Device device) : device_(device) {}
  Device device() const noexcept { return device_; }

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
  std::mutex mutex_;
  std::uint64_t begun_ = 0;
  std::uint64_t finished_ = 0;
  std::vector<std::pair<std::uint64_t, std::function<void()>>> waiters_;
};

}  // namespace cmdgraph::detail
