// Timed waits with extreme timeouts (issue 20 #4): nanoseconds::max() waits as long as it takes,
// a negative timeout is a poll, and neither overflows the clock (UBSan checks under --setup asan).
#include "sync/deadline.hpp"

#include <cmdgraph/cmdgraph.hpp>

#include <doctest/doctest.h>

#include <chrono>
#include <future>
#include <thread>

using namespace cmdgraph;
using namespace std::chrono_literals;

namespace {

constexpr auto forever = std::chrono::nanoseconds::max();
constexpr auto never = std::chrono::nanoseconds::min();

// A host task that holds its launch until the test opens it (bounded, so nothing can hang).
struct Gate {
  std::promise<void> promise;
  std::shared_future<void> opened = promise.get_future().share();
  void open() { promise.set_value(); }
  void pass() const { (void)opened.wait_for(30s); }
};

// Opens `gate` from another thread a little later, while the test is inside its wait.
std::thread open_later(Gate& gate) {
  return std::thread([&gate] {
    std::this_thread::sleep_for(50ms);
    gate.open();
  });
}

// A launch on the host whose one task waits at `gate`.
struct HeldLaunch {
  Gate gate;
  Executable exe = compile_held(gate);
  Queue queue{Device::host()};
  Fence fence = exe.launch(queue);

  static Executable compile_held(Gate& gate) {
    CommandBuffer cmd("held");
    cmd.host([&gate] { gate.pass(); });
    return compile(cmd, Device::host());
  }
};

}  // namespace

TEST_CASE("reliability.deadline_saturates") {
  using clock = std::chrono::steady_clock;
  const clock::time_point now = clock::now();
  CHECK(detail::deadline_after(now, forever) == clock::time_point::max());
  CHECK(detail::deadline_after(now, never) < now);
  CHECK(detail::deadline_after(now, 1s) == now + 1s);
  CHECK(detail::deadline_after(clock::time_point::max() - 1s, 2s) == clock::time_point::max());
  CHECK(detail::deadline_after(clock::time_point::min() + 1s, -2s) == clock::time_point::min());
}

TEST_CASE("reliability.fence_wait_for_max_waits" * doctest::timeout(60)) {
  HeldLaunch held;
  std::thread opener = open_later(held.gate);
  CHECK(held.fence.wait_for(forever));
  CHECK(held.fence.ready());
  opener.join();
}

TEST_CASE("reliability.queue_wait_for_max_waits" * doctest::timeout(60)) {
  HeldLaunch held;
  std::thread opener = open_later(held.gate);
  CHECK(held.queue.wait_for(forever));
  CHECK(held.fence.ready());
  opener.join();
}

TEST_CASE("reliability.semaphore_wait_max_waits" * doctest::timeout(60)) {
  TimelineSemaphore semaphore(0);
  std::thread signaller([&] {
    std::this_thread::sleep_for(50ms);
    semaphore.signal(1);
  });
  CHECK(semaphore.wait(1, forever));
  CHECK(semaphore.value() == 1);
  signaller.join();
}

TEST_CASE("reliability.negative_timeouts_poll" * doctest::timeout(60)) {
  HeldLaunch held;
  Fence& fence = held.fence;
  Queue& queue = held.queue;
  Gate& gate = held.gate;
  TimelineSemaphore semaphore(0);
  CHECK_FALSE(fence.wait_for(never));
  CHECK_FALSE(queue.wait_for(never));
  CHECK_FALSE(semaphore.wait(1, never));
  CHECK_FALSE(fence.wait_for(-1s));
  gate.open();
  CHECK(fence.wait_for(30s));
  CHECK(fence.wait_for(never));  // finished: every timeout says so
  CHECK(queue.wait_for(never));
  semaphore.signal(1);
  CHECK(semaphore.wait(1, never));
}
