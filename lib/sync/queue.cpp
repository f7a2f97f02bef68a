// The public Queue and QueuePool.
#include "sync/event_state.hpp"
#include "sync/queue_state.hpp"

#include <cmdgraph/error.hpp>
#include <cmdgraph/event.hpp>
#include <cmdgraph/executable.hpp>
#include <cmdgraph/queue.hpp>

#include <string>

namespace cmdgraph {

Queue::Queue(Device device, Priority priority)
    : state_(std::make_shared<detail::QueueState>(device, priority)) {}
Queue::Queue(Device device, int native_priority)
    : state_(std::make_shared<detail::QueueState>(device, native_priority)) {}
Queue::Queue(Queue&&) noexcept = default;
Queue& Queue::operator=(Queue&&) noexcept = default;
Queue::~Queue() = default;

detail::QueueState& Queue::state() const {
  if (!state_) throw Error(errc::invalid_handle, "a moved-from queue was used");
  return *state_;
}

const std::shared_ptr<detail::QueueState>& Queue::shared_state() const {
  state();
  return state_;
}

Device Queue::device() const noexcept { return state_ ? state_->device() : Device::host(); }
int Queue::native_priority() const noexcept { return state_ ? state_->native_priority() : 0; }
NativeStream Queue::native_handle() const noexcept { return state_ ? state_->stream() : nullptr; }
void Queue::wait() { state().wait(); }
bool Queue::wait_for(std::chrono::nanoseconds timeout) { return state().wait_for(timeout); }

Fence Queue::submit(Executable& executable, const SubmitInfo& info) {
  return executable.launch(*this, info);
}

void Queue::wait(const Event& event) {
  if (!event.state()) throw Error(errc::invalid_handle, "a queue was asked to wait for a moved-from event");
  state().wait_event(event.state());
}

void Queue::record(Event& event) {
  if (!event.state()) throw Error(errc::invalid_handle, "a moved-from event was recorded");
  state().record_event(event.state());
}

QueuePool::QueuePool(Device device, std::size_t queues_per_priority)
    : device_(device), per_priority_(queues_per_priority) {
  if (queues_per_priority == 0 || queues_per_priority > max_queues_per_priority) {
    throw Error(errc::invalid_argument,
                "a queue pool holds 1 to " + std::to_string(max_queues_per_priority) +
                    " queues per priority, not " + std::to_string(queues_per_priority));
  }
  const Priority priorities[] = {Priority::low, Priority::normal, Priority::high};
  for (Priority p : priorities) {
    auto& queues = queues_[static_cast<std::size_t>(p)];
    queues.reserve(queues_per_priority);
    for (std::size_t i = 0; i < queues_per_priority; ++i) queues.emplace_back(device, p);
  }
}

Queue& QueuePool::acquire(Priority priority) {
  const auto p = static_cast<std::size_t>(priority);
  if (p >= queues_.size()) {
    throw Error(errc::invalid_argument, "QueuePool::acquire: priority " + std::to_string(p) +
                                            " is none of low, normal and high");
  }
  const std::size_t turn = next_[p].fetch_add(1, std::memory_order_relaxed);
  return queues_[p][turn % per_priority_];
}

void QueuePool::wait() {
  std::exception_ptr first;
  for (auto& queues : queues_) {
    for (Queue& q : queues) {
      try {
        q.wait();
      } catch (...) {
        if (!first) first = std::current_exception();
      }
    }
  }
  if (first) std::rethrow_exception(first);
}

}  // namespace cmdgraph
