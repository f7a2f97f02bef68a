// QueueState's host lane, and the public Queue.
#include "run/queue_state.hpp"

#include "run/thread_pool.hpp"

#include <cmdgraph/error.hpp>

#include <utility>

namespace cmdgraph {
namespace detail {

QueueState::QueueState(Device device, Priority priority) : device_(device), priority_(priority) {}

QueueState::~QueueState() {
  std::unique_lock lock(mutex_);
  idle_.wait(lock, [&] { return !running_; });
}

void QueueState::submit(Job job) {
  {
    std::lock_guard lock(mutex_);
    if (running_) {
      pending_.push_back(std::move(job));
      return;
    }
    running_ = true;
  }
  start(std::move(job));
}

void QueueState::start(Job job) {
  // The job runs on this thread until it hands its work to the pool; `done` may be called
  // from anywhere, even before job() returns.
  job([this](std::exception_ptr error) { finished(std::move(error)); });
}

void QueueState::finished(std::exception_ptr error) {
  Job next;
  {
    std::lock_guard lock(mutex_);
    if (error && !first_error_) first_error_ = error;
    if (pending_.empty()) {
      running_ = false;
      idle_.notify_all();
      return;
    }
    next = std::move(pending_.front());
    pending_.pop_front();
  }
  // Start the next job from the pool, not from inside this one's completion: a run of jobs
  // that finish at once must not nest on the stack.
  host_pool().post([this, next = std::move(next)]() mutable { start(std::move(next)); });
}

void QueueState::rethrow_pending_error(std::unique_lock<std::mutex>& lock) {
  if (auto e = std::exchange(first_error_, nullptr)) {
    lock.unlock();
    std::rethrow_exception(e);
  }
}

void QueueState::wait() {
  std::unique_lock lock(mutex_);
  idle_.wait(lock, [&] { return !running_; });
  rethrow_pending_error(lock);
}

bool QueueState::wait_for(std::chrono::nanoseconds timeout) {
  std::unique_lock lock(mutex_);
  if (!idle_.wait_for(lock, timeout, [&] { return !running_; })) return false;
  rethrow_pending_error(lock);
  return true;
}

}  // namespace detail

Queue::Queue(Device device, Priority priority)
    : state_(std::make_shared<detail::QueueState>(device, priority)) {}
Queue::Queue(Queue&&) noexcept = default;
Queue& Queue::operator=(Queue&&) noexcept = default;
Queue::~Queue() = default;

detail::QueueState& Queue::state() const {
  if (!state_) throw Error(errc::invalid_handle, "a moved-from queue was used");
  return *state_;
}

Device Queue::device() const noexcept { return state_ ? state_->device() : Device::host(); }
void Queue::wait() { state().wait(); }
bool Queue::wait_for(std::chrono::nanoseconds timeout) { return state().wait_for(timeout); }
NativeStream Queue::native_handle() const noexcept { return nullptr; }

}  // namespace cmdgraph
