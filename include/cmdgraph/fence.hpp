// Fence: the completion of one launch or submission, observable from the host: wait, poll,
// continue with a callback, convert to std::future, or co_await.
#pragma once

#include <chrono>
#include <coroutine>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <type_traits>
#include <utility>

namespace cmdgraph {

namespace detail {
class FenceState;
struct Access;
}

/// Signalled when the work it was returned for has finished. Copies observe the same work.
/// A default-constructed Fence is already signalled. Every wait rethrows the work's error
/// (a failed host task, a CUDA fault) as cmdgraph::Error naming the command, each time it is
/// waited on; an error is never used up: a Queue::wait() covering the same launch reports it
/// too (as CUDA reports a fault to every wait that covers it).
///
/// Waiting on cmdgraph's own threads: a cmdgraph wait (Fence, Queue, Event, TimelineSemaphore)
/// made inside a then() callback, a coroutine resumed by co_await, or a host task of the host
/// backend marks its thread blocked, and cmdgraph runs the work queued behind it on a spare
/// thread, so such a wait never deadlocks cmdgraph. Spares retire once idle; a pool starts at
/// most 256 threads, and a wait that would need one more throws Error(out_of_memory) instead
/// of hanging. Blocking of your own there (a mutex, a sleep, a std::future, a condition
/// variable) is invisible to cmdgraph: it holds the thread, and the work queued behind it
/// waits; keep it short, or wait through cmdgraph.
class Fence {
 public:
  /// A fence that is already signalled, with no error.
  Fence() = default;

  /// Blocks until the work finished; rethrows its error.
  void wait() const;
  /// Waits at most `timeout`; returns true when finished (rethrowing its error), false when
  /// the time ran out.
  bool wait_for(std::chrono::nanoseconds timeout) const;
  /// True when finished, successfully or not. Never blocks, never throws.
  bool ready() const noexcept;

  /// Runs `callback` once the work finished, on cmdgraph's callback thread (never on CUDA's
  /// own callback thread, so it may call CUDA and cmdgraph, wait on other fences, launch).
  /// Callbacks run one at a time in the order their work finished, except that while one
  /// waits in a cmdgraph wait the next ones run on a spare thread (see above).
  /// `callback` takes the work's error (null on success) or nothing. Returns a fence that
  /// signals after the callback returned: with the callback's exception if it threw (a
  /// cmdgraph::Error as it is, anything else nested in Error(host_task_failed)), else with the
  /// work's error.
  template <class F>
  Fence then(F&& callback) const {
    if constexpr (std::is_invocable_v<F&, std::exception_ptr>) {
      return then_impl(std::function<void(std::exception_ptr)>(std::forward<F>(callback)));
    } else {
      static_assert(std::is_invocable_v<F&>, "then() takes f() or f(std::exception_ptr)");
      return then_impl([f = std::forward<F>(callback)](std::exception_ptr) mutable { f(); });
    }
  }

  /// A future that becomes ready with the work (and throws its error from get()).
  std::future<void> to_future() const;
  /// to_future(), so that `std::future<void> done = exe.launch(queue);` works.
  operator std::future<void>() const { return to_future(); }

  struct Awaiter;  // below: a nested struct holding a Fence needs Fence complete
  /// Makes `co_await fence` work in any coroutine type (cmdgraph::Task in cmdgraph/task.hpp
  /// is one; Boost.Asio's awaitable is not: use cmdgraph::async_wait).
  Awaiter operator co_await() const noexcept;

 private:
  friend struct detail::Access;
  explicit Fence(std::shared_ptr<detail::FenceState> state) noexcept : state_(std::move(state)) {}
  Fence then_impl(std::function<void(std::exception_ptr)> callback) const;
  std::shared_ptr<detail::FenceState> state_;
};

/// What `co_await fence` awaits: suspends the coroutine until the work finished; it resumes on
/// cmdgraph's callback thread and rethrows the work's error.
struct Fence::Awaiter {
  /// A copy of the fence awaited: the Fence that was co_awaited may be destroyed or reassigned
  /// while the coroutine is suspended, and the coroutine still resumes with the outcome of the
  /// work it awaited.
  Fence fence;
  /// True when the fence already signalled: no suspension.
  bool await_ready() const noexcept { return fence.ready(); }
  /// Resumes `handle` on cmdgraph's callback thread once the fence signals.
  void await_suspend(std::coroutine_handle<> handle) const;
  /// Rethrows the work's error, if there was one.
  void await_resume() const { fence.wait(); }
};

inline Fence::Awaiter Fence::operator co_await() const noexcept { return Awaiter{*this}; }

}  // namespace cmdgraph
