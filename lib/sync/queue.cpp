// The public Queue and QueuePool.
#include "sync/access.hpp"
#include "sync/event_state.hpp"
#include "sync/queue_state.hpp"

#include <cmdgraph/error.hpp>
#include <cmdgraph/event.hpp>
#include <cmdgraph/executable.hpp>
#include <cmdgraph/queue.hpp>

#include <string>

namespace cmdgraph {

Queue::Queue(Device device, Priority priority) : state_(detail::make_queue(device, priority)) {}
Queue::Queue(Device device, int native_priority)
    : state_(detail::make_queue(device, native_priority)) {}
Queue::Queue(Queue&&) noexcept = default;
Queue& Queue::operator=(Queue&&) noexcept = default;
Queue::~Queue() = default;

namespace {
detail::QueueState& checked(const std::shared_ptr<detail::QueueState>& state) {
  if (!state) throw Error(errc::invalid_handle, "a moved-from queue was used");
  return *state;
}
const std::shared_ptr<detail::EventState>& checked(const Event& event, const char* what) {
  const auto& state = detail::Access::state(event);
  if (!state) throw Error(errc::invalid_handle, what);
  return state;
}
}  // namespace

Device Queue::device() const noexcept { return state_ ? state_->device() : Device::host(); }
int Queue::native_priority() const noexcept { return state_ ? state_->native_priority() : 0; }
NativeStream Queue::native_handle() const noexcept { return state_ ? state_->stream() : nullptr; }
void Queue::wait() { checked(state_).wait(); }
bool Queue::wait_for(std::chrono::nanoseconds timeout) { return checked(state_).wait_for(timeout); }

Fence Queue::submit(Executable& executable, const SubmitInfo& info) {
  return executable.launch(*this, info);
}

void Queue::wait(const Event& event) {
  checked(state_).wait_event(checked(event, "a queue was asked to wait for a moved-from event"));
}

void Queue::record(Event& event) {
  checked(state_).record_event(checked(event, "a moved-from event was recorded"));
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
