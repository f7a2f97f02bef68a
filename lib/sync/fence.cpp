// The public Fence: waits, and continuations that run on the callback thread.
#include "error/task_failure.hpp"
#include "sync/fence_state.hpp"
#include "sync/thread_pool.hpp"

#include <cmdgraph/fence.hpp>

namespace cmdgraph {

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

bool Fence::ready() const noexcept {
  try {
    return !state_ || state_->done();
  } catch (...) {
    return true;  // a fence whose device query fails has finished, with an error
  }
}

Fence Fence::then_impl(std::function<void(std::exception_ptr)> callback) const {
  auto next = std::make_shared<detail::FenceState>();
  auto run = [source = state_, next, callback = std::move(callback)]() mutable {
    std::exception_ptr error = source ? source->error() : nullptr;
    try {
      callback(error);
    } catch (...) {
      error = detail::callback_failure();
    }
    next->complete(error);
  };
  auto post = [run = std::move(run)]() mutable {
    detail::callback_thread().post(std::move(run));
  };
  if (state_) {
    state_->on_complete(std::move(post));
  } else {
    post();
  }
  return Fence(std::move(next));
}

std::future<void> Fence::to_future() const {
  auto promise = std::make_shared<std::promise<void>>();
  std::future<void> future = promise->get_future();
  auto settle = [source = state_, promise] {
    if (auto e = source ? source->error() : nullptr) {
      promise->set_exception(e);
    } else {
      promise->set_value();
    }
  };
  if (state_) {
    state_->on_complete(std::move(settle));
  } else {
    settle();
  }
  return future;
}

void Fence::Awaiter::await_suspend(std::coroutine_handle<> handle) const {
  // Resume on the callback thread, never on a worker or CUDA's callback thread.
  fence.state_->on_complete(
      [handle] { detail::callback_thread().post([handle] { handle.resume(); }); });
}

}  // namespace cmdgraph
