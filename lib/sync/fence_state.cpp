// FenceState in both modes, and the public Fence over it.
#include "sync/fence_state.hpp"

#include "sync/deadline.hpp"
#include "sync/watcher.hpp"
#include "sync/poll.hpp"
#include "sync/queue_state.hpp"
#include "sync/thread_pool.hpp"

#include <exception>


namespace cmdgraph {
namespace detail {

std::vector<std::function<void()>> FenceState::mark_complete(std::exception_ptr error) {
  std::vector<std::function<void()>> continuations;
  std::lock_guard lock(mutex_);
  if (done_) return continuations;
  done_ = true;
  error_ = std::move(error);
  continuations.swap(continuations_);
  return continuations;
}

void FenceState::publish(std::vector<std::function<void()>> continuations) {
  cv_.notify_all();
  for (auto& fn : continuations) fn();
}

void FenceState::resolve() { complete(device_->error()); }

void FenceState::ensure_marked() {
  if (auto queue = queue_.lock()) queue->mark(*this);
}

bool FenceState::done() {
  {
    std::lock_guard lock(mutex_);
    if (done_ || !device_) return done_;
  }
  ensure_marked();
  if (!device_->query()) return false;
  resolve();
  return true;
}

void FenceState::wait() {
  if (done()) return;
  const BlockingWait blocking;
  if (device_) {
    device_->synchronize();
    resolve();
    return;
  }
  std::unique_lock lock(mutex_);
  cv_.wait(lock, [&] { return done_; });
}

bool FenceState::wait_for(std::chrono::nanoseconds timeout) {
  const auto deadline = deadline_after(timeout);
  if (done()) return true;
  if (timeout <= std::chrono::nanoseconds::zero()) return false;
  const BlockingWait blocking;
  if (device_) return poll_until(deadline, [&] { return done(); });
  std::unique_lock lock(mutex_);
  return wait_until_deadline(cv_, lock, deadline, [&] { return done_; });
}

std::exception_ptr FenceState::error() {
  std::lock_guard lock(mutex_);
  return error_;
}

void FenceState::on_complete(std::function<void()> fn) {
  bool watch = false;
  {
    std::lock_guard lock(mutex_);
    if (!done_) {
      continuations_.push_back(std::move(fn));
      if (device_ && continuations_.size() == 1) watch = true;
      if (!watch) return;
    }
  }
  if (watch) {
    // The first continuation of device work: have the watcher look for its end.
    ensure_marked();
    Watcher::instance().watch([self = shared_from_this()] {
      if (!self->device_->query()) return false;
      self->resolve();
      return true;
    });
    return;
  }
  fn();
}

}  // namespace detail
}  // namespace cmdgraph
