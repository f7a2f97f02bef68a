// Task: the smallest coroutine type that lets a test co_await fences. It starts at once and
// reports its end (or exception) through `finished`.
#pragma once

#include <coroutine>
#include <exception>
#include <future>

namespace cmdgraph::testing {

struct Task {
  struct promise_type {
    std::promise<void> done;
    Task get_return_object() { return Task{done.get_future()}; }
    std::suspend_never initial_suspend() noexcept { return {}; }
    std::suspend_never final_suspend() noexcept { return {}; }
    void return_void() { done.set_value(); }
    void unhandled_exception() { done.set_exception(std::current_exception()); }
  };
  std::future<void> finished;
};

}  // namespace cmdgraph::testing
