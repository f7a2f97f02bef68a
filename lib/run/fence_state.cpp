// FenceState and the public Fence over it.
#include "run/fence_state.hpp"

#include <cmdgraph/fence.hpp>

namespace cmdgraph {
namespace detail {

void FenceState::complete(std::exception_ptr error) {
  std::vector<std::function<void()>> continuations;
  {
    std::lock_guard lock(mutex_);
    done_ = true;
    error_ = std::move(error);
    continuations.swap(continuations_);
  }
  cv_.notify_all();
  for (auto& fn : continuations) fn();
}

bool FenceState::done() const noexcept {
  std::lock_guard lock(mutex_);
  return done_;
}

void FenceState::wait() const {
  std::unique_lock lock(mutex_);
  cv_.wait(lock, [&] { return done_; });
}

bool FenceState::wait_for(std::chrono::nanoseconds timeout) const {
  std::unique_lock lock(mutex_);
  return cv_.wait_for(lock, timeout, [&] { return done_; });
}

std::exception_ptr FenceState::error() const {
  std::lock_guard lock(mutex_);
  return error_;
}

void FenceState::on_complete(std::function<void()> fn) {
  {
    std::lock_guard lock(mutex_);
    if (!done_) {
      continuations_.push_back(std::move(fn));
      return;
    }
  }
  fn();
}

}  // namespace detail

void Fence::wait() const {
  if (!state_) return;
  state_->wait();
  if (auto e = state_->error()) std::rethrow_exception(e);
}

bool Fence::wait_for(std::chrono::nanoseconds timeout) const {
  if (!state_) return true;
  if (!state_->wait_for(timeout)) return false;
  if (auto e = state_->error()) std::rethrow_exception(e);
  return true;
}

bool Fence::ready() const noexcept { return !state_ || state_->done(); }

}  // namespace cmdgraph
