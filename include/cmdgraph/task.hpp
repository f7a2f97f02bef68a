// Task: the smallest coroutine type that can co_await fences, so `co_await exe.launch(queue)`
// works without writing one. It starts at once and hands its result over through a future.
#pragma once

#include <cmdgraph/error.hpp>

#include <chrono>
#include <coroutine>
#include <exception>
#include <future>
#include <string>
#include <utility>

namespace cmdgraph {

template <class T>
class Task;

namespace detail {

template <class T>
struct TaskPromiseBase {
  std::promise<T> result;
  template <class U>
  void return_value(U&& value) {
    result.set_value(std::forward<U>(value));
  }
};

template <>
struct TaskPromiseBase<void> {
  std::promise<void> result;
  void return_void() { result.set_value(); }
};

}  // namespace detail

/// A coroutine returning `T` that starts running as soon as it is called (it is not lazy) and
/// delivers what it returns, or the exception that escaped it, through a std::future.
///
/// `co_await fence` inside it suspends until the fence signals; the body then continues on
/// cmdgraph's callback thread (Fence::Awaiter), where it may launch and wait again. The
/// coroutine frame frees itself when the body ends: dropping the Task neither cancels nor
/// waits for the body, so whatever the body uses must outlive it. Not for Boost.Asio's
/// `awaitable` coroutines: those await cmdgraph::async_wait (cmdgraph/asio.hpp).
///
/// \code
/// cmdgraph::Task<float> first(cmdgraph::Executable& exe, cmdgraph::Queue& queue,
///                             const cmdgraph::HostBuffer<float>& out) {
///   co_await exe.launch(queue);   // rethrows the launch's error
///   co_return out[0];
/// }
/// float v = first(exe, queue, out).get();
/// \endcode
template <class T = void>
class Task {
 public:
  /// The coroutine's promise: used by the compiler, not by callers.
  struct promise_type : detail::TaskPromiseBase<T> {
    /// The Task handed to the caller; holds the future of this promise's result.
    Task get_return_object() { return Task(this->result.get_future()); }
    /// Never suspends: the body starts before the call returns.
    std::suspend_never initial_suspend() noexcept { return {}; }
    /// Never suspends: the frame is freed as soon as the body ends.
    std::suspend_never final_suspend() noexcept { return {}; }
    /// Stores the escaping exception for get() to rethrow.
    void unhandled_exception() noexcept { this->result.set_exception(std::current_exception()); }
  };

  /// Blocks until the body ended; returns its value or rethrows its exception.
  /// Error(wrong_state) once get() or future() took the result.
  /// \post valid() is false.
  T get() {
    check_result("get");
    return result_.get();
  }
  /// Blocks until the body ended, without consuming the result. Error(wrong_state) once
  /// get() or future() took the result.
  void wait() const {
    check_result("wait");
    result_.wait();
  }
  /// True once the body ended (returned or threw). Never blocks. Error(wrong_state) once
  /// get() or future() took the result.
  bool done() const {
    check_result("done");
    return result_.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
  }
  /// False once get() or future() took the result.
  bool valid() const noexcept { return result_.valid(); }
  /// The result as a std::future, to be waited on elsewhere. Error(wrong_state) once get()
  /// or future() took the result.
  /// \post valid() is false.
  std::future<T> future() {
    check_result("future");
    return std::move(result_);
  }

 private:
  explicit Task(std::future<T> result) noexcept : result_(std::move(result)) {}
  // Error(wrong_state) naming `call` once get() or future() took the result.
  void check_result(const char* call) const {
    if (!result_.valid()) {
      throw Error(errc::wrong_state, std::string("Task::") + call +
                                         "(): the task's result was already taken by get() or "
                                         "future()");
    }
  }
  std::future<T> result_;
};

}  // namespace cmdgraph
