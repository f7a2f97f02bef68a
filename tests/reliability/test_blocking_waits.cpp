// Waits on cmdgraph's own threads (issue 20 #3, #8): a then() callback or a resumed coroutine
// that waits for work needing the callback thread, host tasks that wait while every worker is
// taken, a host task that waits for another host launch. Each must finish, not deadlock; every
// wait here is bounded, so a regression fails instead of hanging.
#include "sync/thread_pool.hpp"
#include "support/expect_error.hpp"
#include "support/task.hpp"

#include <cmdgraph/cmdgraph.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <latch>
#include <memory>
#include <thread>
#include <vector>

using namespace cmdgraph;
using namespace std::chrono_literals;

namespace {

// Long enough for anything here on a loaded machine; a deadlock runs into it.
constexpr auto bound = 20s;

Executable trivial(const char* name) {
  CommandBuffer cmd(name);
  cmd.host([] {});
  return compile(cmd, Device::host());
}

// Polls `done` until true or the bound passes.
template <class Done>
bool eventually(Done done) {
  const auto end = std::chrono::steady_clock::now() + bound;
  while (!done()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

}  // namespace

TEST_CASE("reliability.then_callback_waits_on_then_fence" * doctest::timeout(120)) {
  Executable a = trivial("a"), b = trivial("b");
  Queue q(Device::host()), q2(Device::host());
  std::atomic<int> inner{-1};
  Fence outer = a.launch(q).then([&] { inner = b.launch(q2).then([] {}).wait_for(bound) ? 1 : 0; });
  REQUIRE(outer.wait_for(2 * bound));
  CHECK(inner == 1);
}

TEST_CASE("reliability.coroutine_resumed_by_co_await_waits" * doctest::timeout(120)) {
  std::promise<void> gate;
  std::shared_future<void> opened = gate.get_future().share();
  CommandBuffer held("held");
  held.host([opened] { (void)opened.wait_for(bound); });
  Executable a = compile(held, Device::host());
  Executable b = trivial("b");
  Queue q(Device::host()), q2(Device::host());
  std::atomic<int> inner{-1};
  auto body = [&]() -> testing::Task {
    co_await a.launch(q);  // suspends: `held` waits for the gate
    inner = b.launch(q2).then([] {}).wait_for(bound) ? 1 : 0;
  };
  testing::Task task = body();
  gate.set_value();  // resumes the coroutine on the callback thread
  REQUIRE(task.finished.wait_for(2 * bound) == std::future_status::ready);
  task.finished.get();
  CHECK(inner == 1);
}

// As many host tasks as the pool has workers, each in a different cmdgraph wait, and another
// executable launched meanwhile still runs.
TEST_CASE("reliability.blocked_host_tasks_leave_the_pool_working" * doctest::timeout(120)) {
  const std::size_t workers = detail::host_pool().size();
  TimelineSemaphore release(0);
  // What the blocked tasks wait for: all of it finishes once `release` reaches 1.
  Executable held = trivial("held");
  Queue held_queue(Device::host());
  Fence held_fence = held_queue.submit(held, {.wait = {{release, 1}}});
  Event event(Device::host());
  CommandBuffer marks("marks");
  marks.record(event);
  Executable marker = compile(marks, Device::host());
  Queue event_queue(Device::host());
  (void)event_queue.submit(marker, {.wait = {{release, 1}}});

  std::atomic<std::size_t> entered{0}, returned{0};
  CommandBuffer blockers("blockers");
  for (std::size_t i = 0; i < workers; ++i) {
    blockers.host([&, kind = i % 4] {
      ++entered;
      switch (kind) {
        case 0: (void)release.wait(1, bound); break;
        case 1: (void)held_fence.wait_for(bound); break;
        case 2: (void)held_queue.wait_for(bound); break;
        default: event.wait(); break;  // recorded once `release` reaches 1
      }
      ++returned;
    });
  }
  Executable blocking = compile(blockers, Device::host());
  Queue blocking_queue(Device::host());
  Fence blocked = blocking.launch(blocking_queue);
  REQUIRE(eventually([&] { return entered == workers; }));

  Executable other = trivial("other");
  Queue other_queue(Device::host());
  CHECK(other.launch(other_queue).wait_for(bound / 2));
  CHECK(returned == 0);  // nothing was released early

  release.signal(1);
  REQUIRE(blocked.wait_for(2 * bound));
  CHECK(returned == workers);
  // The spares the waits called in retire once idle.
  CHECK(eventually([] { return detail::host_pool().threads() == detail::host_pool().size(); }));
}

// Every worker runs a host task that launches another host executable and waits for it.
TEST_CASE("reliability.host_task_waits_on_another_host_launch" * doctest::timeout(120)) {
  const std::size_t workers = detail::host_pool().size();
  Executable inner = trivial("inner");
  std::vector<Executable> inners;
  std::vector<std::unique_ptr<Queue>> queues;
  for (std::size_t i = 0; i < workers; ++i) {
    inners.push_back(inner.clone());
    queues.push_back(std::make_unique<Queue>(Device::host()));
  }
  std::latch all_started(static_cast<std::ptrdiff_t>(workers));
  std::atomic<std::size_t> finished{0};
  CommandBuffer outer("outer");
  for (std::size_t i = 0; i < workers; ++i) {
    outer.host([&, i] {
      // Hold every worker before launching, so no worker is left free for the inner launches.
      all_started.count_down();
      (void)eventually([&] { return all_started.try_wait(); });
      if (inners[i].launch(*queues[i]).wait_for(bound)) ++finished;
    });
  }
  Executable exe = compile(outer, Device::host());
  Queue queue(Device::host());
  REQUIRE(exe.launch(queue).wait_for(3 * bound));
  CHECK(finished == workers);
}

// The pool grows only so far: a wait that would need a thread beyond the bound says so.
TEST_CASE("reliability.pool_thread_bound_is_a_clear_error" * doctest::timeout(120)) {
  std::promise<void> release_a, release_b;
  std::shared_future<void> a_released = release_a.get_future().share();
  std::shared_future<void> b_may_wait = release_b.get_future().share();
  std::atomic<bool> a_blocked{false}, c_ran{false};
  std::promise<std::string> b_error;
  detail::ThreadPool pool(1, 2);  // destroyed first: its threads use what is above
  pool.post([&] {
    const detail::BlockingWait blocking;
    a_blocked = true;
    (void)a_released.wait_for(bound);
  });
  REQUIRE(eventually([&] { return a_blocked.load(); }));
  pool.post([&] {  // on a spare: the only worker is blocked
    (void)b_may_wait.wait_for(bound);
    try {
      const detail::BlockingWait blocking;  // c is queued and both threads would be blocked
      b_error.set_value("");
    } catch (const Error& e) {
      b_error.set_value(std::string(to_string(e.code())) + ": " + e.what());
    }
  });
  REQUIRE(eventually([&] { return pool.threads() == 2; }));
  pool.post([&] { c_ran = true; });
  release_b.set_value();
  std::future<std::string> error = b_error.get_future();
  REQUIRE(error.wait_for(bound) == std::future_status::ready);
  const std::string message = error.get();
  MESSAGE(message);
  CHECK(message.find("out of memory") == 0);
  CHECK(message.find("at most 2") != std::string::npos);
  CHECK(eventually([&] { return c_ran.load(); }));
  release_a.set_value();
}
