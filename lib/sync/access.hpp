// Access: the library's own door to the state behind the public synchronisation handles
// (Event, Fence, Queue, TimelineSemaphore), which users never see. Each handle befriends it.
#pragma once

#include <cmdgraph/event.hpp>
#include <cmdgraph/fence.hpp>
#include <cmdgraph/queue.hpp>
#include <cmdgraph/semaphore.hpp>

#include <memory>
#include <utility>

namespace cmdgraph::detail {

struct Access {
  static const std::shared_ptr<EventState>& state(const Event& e) noexcept { return e.state_; }
  static const std::shared_ptr<FenceState>& state(const Fence& f) noexcept { return f.state_; }
  static const std::shared_ptr<QueueState>& state(const Queue& q) noexcept { return q.state_; }
  static const std::shared_ptr<SemaphoreState>& state(const TimelineSemaphore& s) noexcept {
    return s.state_;
  }
  static Fence fence(std::shared_ptr<FenceState> state) noexcept {
    return Fence(std::move(state));
  }
};

}  // namespace cmdgraph::detail
