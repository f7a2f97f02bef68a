// EventState's host generations, and the public Event.
#include "run/event_state.hpp"

#include <cmdgraph/event.hpp>

#include <algorithm>
#include <functional>

namespace cmdgraph {
namespace detail {

EventState::EventState(Device device, bool timing) : device_(device), timing_(timing) {
#if CMDGRAPH_HAVE_CUDA
  if (device.is_cuda()) native_ = cuda::create_event(device.ordinal(), timing);
#endif
}

NativeEvent EventState::native() const noexcept {
#if CMDGRAPH_HAVE_CUDA
  return native_.get();
#else
  return nullptr;
#endif
}

std::uint64_t EventState::begin_record() {
  std::lock_guard lock(mutex_);
  return ++begun_;
}

void EventState::finish_record(std::uint64_t generation) {
  std::vector<std::function<void()>> ready;
  {
    std::lock_guard lock(mutex_);
    finished_ = std::max(finished_, generation);
    auto keep = std::partition(waiters_.begin(), waiters_.end(),
                               [&](const auto& w) { return w.first > finished_; });
    for (auto it = keep; it != waiters_.end(); ++it) ready.push_back(std::move(it->second));
    waiters_.erase(keep, waiters_.end());
  }
  for (auto& fn : ready) fn();
}

bool EventState::recorded_or_defer(std::function<void()> fn) {
  std::lock_guard lock(mutex_);
  if (finished_ >= begun_) return true;
  waiters_.emplace_back(begun_, std::move(fn));
  return false;
}

}  // namespace detail

Event::Event(Device device) : state_(std::make_shared<detail::EventState>(device, false)) {}

Device Event::device() const noexcept { return state_ ? state_->device() : Device::host(); }

}  // namespace cmdgraph
