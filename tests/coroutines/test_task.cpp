// cmdgraph::Task: a coroutine that co_awaits launches, returns a value or an exception through
// its future, and starts before the call returns.
#include "support/expect_error.hpp"
#include "support/host_programs.hpp"

#include <cmdgraph/cmdgraph.hpp>
#include <cmdgraph/task.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

using namespace cmdgraph;
using cmdgraph::testing::host_exe;
using namespace std::chrono_literals;

TEST_CASE("task.returns_after_awaited_launches" * doctest::timeout(30)) {
  Queue queue(Device::host());
  std::vector<int> log;
  Executable a = host_exe("a", [&] { log.push_back(1); });
  Executable b = host_exe("b", [&] { log.push_back(2); });
  auto body = [&]() -> Task<int> {
    co_await a.launch(queue);
    co_await b.launch(queue);
    co_return static_cast<int>(log.size()) * 10;
  };
  Task<int> task = body();
  CHECK(task.valid());
  CHECK(task.get() == 20);
  CHECK_FALSE(task.valid());
  CHECK(log == std::vector<int>{1, 2});
}

TEST_CASE("task.starts_eagerly_and_resumes_off_the_caller" * doctest::timeout(30)) {
  Queue queue(Device::host());
  std::atomic<bool> release{false};
  Executable gate = host_exe("gate", [&] {
    while (!release) std::this_thread::sleep_for(1ms);
  });
  const auto caller = std::this_thread::get_id();
  std::thread::id before, after;
  auto body = [&]() -> Task<> {
    before = std::this_thread::get_id();
    co_await gate.launch(queue);
    after = std::this_thread::get_id();
  };
  Task<> task = body();
  CHECK(before == caller);  // ran up to its first co_await before body() returned
  CHECK_FALSE(task.done());
  release = true;
  task.wait();
  CHECK(task.done());
  task.get();
  CHECK(after != caller);  // continued on cmdgraph's callback thread
}

TEST_CASE("task.carries_the_launch_error" * doctest::timeout(30)) {
  Queue queue(Device::host());
  Executable failing = host_exe("broken", [] { throw std::runtime_error("no"); });
  auto body = [&]() -> Task<> { co_await failing.launch(queue); };
  Task<> task = body();
  std::future<void> result = task.future();
  CHECK_FALSE(task.valid());
  const auto error = CMDGRAPH_EXPECT_ERROR(result.get(), errc::host_task_failed);
  REQUIRE(error);
  CHECK(testing::mentions(*error, "broken"));
  try {
    queue.wait();
  } catch (const Error&) {
  }
}

TEST_CASE("task.carries_its_own_exception" * doctest::timeout(30)) {
  auto body = []() -> Task<int> {
    co_await Fence{};  // a default fence is signalled: no suspension
    throw std::logic_error("mine");
  };
  Task<int> task = body();
  CHECK(task.done());
  CHECK_THROWS_AS(task.get(), std::logic_error);
}

TEST_CASE("task.a_result_taken_twice_is_a_clear_error" * doctest::timeout(30)) {
  auto body = []() -> Task<int> { co_return 7; };
  Task<int> task = body();
  CHECK(task.get() == 7);
  // Not std::future_error: cmdgraph's own error, saying what happened.
  auto e = CMDGRAPH_EXPECT_ERROR(task.get(), errc::wrong_state);
  REQUIRE(e);
  CHECK(cmdgraph::testing::mentions(*e, "already taken"));
  CMDGRAPH_EXPECT_ERROR(task.wait(), errc::wrong_state);
  CMDGRAPH_EXPECT_ERROR(task.done(), errc::wrong_state);
  Task<int> other = body();
  std::future<int> moved = other.future();
  CHECK(moved.get() == 7);
  CMDGRAPH_EXPECT_ERROR(other.future(), errc::wrong_state);
}
