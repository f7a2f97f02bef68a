// cmdgraph::async_wait: one Asio operation per fence, for every kind of completion token,
// completing on the token's executor and keeping io_context::run() busy until it has.
#include "support/expect_error.hpp"

#include <cmdgraph/asio.hpp>
#include <cmdgraph/cmdgraph.hpp>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/version.hpp>
#if BOOST_VERSION >= 108000
#include <boost/asio/deferred.hpp>
#endif
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <stdexcept>
#include <thread>

using namespace cmdgraph;
using namespace std::chrono_literals;
namespace asio = boost::asio;

namespace {

Executable host_exe(const char* name, std::function<void()> body) {
  CommandBuffer cmd(name);
  cmd.host(std::move(body)).named(name);
  return compile(cmd, Device::host());
}

// A launch that ends some time after it started, so every wait below really waits.
Executable slow_exe(std::atomic<int>& runs) {
  return host_exe("slow", [&runs] {
    std::this_thread::sleep_for(20ms);
    ++runs;
  });
}

}  // namespace

TEST_CASE("asio.use_awaitable.resumes_on_the_coroutine_executor" * doctest::timeout(30)) {
  Queue queue(Device::host());
  std::atomic<int> runs{0};
  Executable exe = slow_exe(runs);
  asio::io_context io;
  const auto io_thread = std::this_thread::get_id();
  int seen = -1;
  bool on_io_thread = false;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        for (int i = 0; i < 3; ++i) co_await async_wait(exe.launch(queue), asio::use_awaitable);
        seen = runs;
        on_io_thread = std::this_thread::get_id() == io_thread;
      },
      [](std::exception_ptr e) {
        if (e) std::rethrow_exception(e);
      });
  io.run();  // returns only once the coroutine ended: each pending wait counts as work
  CHECK(seen == 3);
  CHECK(on_io_thread);
}

TEST_CASE("asio.use_awaitable.rethrows_the_launch_error" * doctest::timeout(30)) {
  Queue queue(Device::host());
  Executable failing = host_exe("broken", [] { throw std::runtime_error("no"); });
  asio::io_context io;
  std::future<void> ended = asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        co_await async_wait(failing.launch(queue), asio::use_awaitable);
      },
      asio::use_future);
  io.run();
  const auto error = CMDGRAPH_EXPECT_ERROR(ended.get(), errc::host_task_failed);
  REQUIRE(error);
  CHECK(testing::mentions(*error, "broken"));
  try {
    queue.wait();
  } catch (const Error&) {
  }
}

TEST_CASE("asio.use_future" * doctest::timeout(30)) {
  Queue queue(Device::host());
  std::atomic<int> runs{0};
  std::atomic<bool> open{false};
  // Held until the test has looked: a busy machine may take any time between two lines.
  Executable exe = host_exe("held", [&] {
    while (!open) std::this_thread::sleep_for(1ms);
    ++runs;
  });
  std::future<void> done = async_wait(exe.launch(queue), asio::use_future);
  CHECK(done.wait_for(0s) == std::future_status::timeout);
  open = true;
  done.get();
  CHECK(runs == 1);

  Executable failing = host_exe("broken", [] { throw std::runtime_error("no"); });
  std::future<void> failed = async_wait(failing.launch(queue), asio::use_future);
  CMDGRAPH_EXPECT_ERROR(failed.get(), errc::host_task_failed);
  try {
    queue.wait();
  } catch (const Error&) {
  }
}

TEST_CASE("asio.callback.runs_on_its_bound_executor_never_inline" * doctest::timeout(30)) {
  Queue queue(Device::host());
  std::atomic<int> runs{0};
  Executable exe = slow_exe(runs);
  asio::io_context io;
  auto strand = asio::make_strand(io);
  int completions = 0;
  bool in_strand = true;
  std::exception_ptr first_error;
  // A signalled fence still completes later, through the executor, not inside async_wait.
  async_wait(Fence{}, asio::bind_executor(strand, [&](std::exception_ptr e) {
               in_strand = in_strand && strand.running_in_this_thread();
               first_error = e;
               ++completions;
             }));
  CHECK(completions == 0);
  async_wait(exe.launch(queue), asio::bind_executor(strand, [&](std::exception_ptr e) {
               in_strand = in_strand && strand.running_in_this_thread() && runs == 1;
               if (e) first_error = e;
               ++completions;
             }));
  CHECK(completions == 0);
  io.run();
  CHECK(completions == 2);
  CHECK(in_strand);
  CHECK_FALSE(first_error);
}

TEST_CASE("asio.callback.plain" * doctest::timeout(30)) {
  Queue queue(Device::host());
  Executable failing = host_exe("broken", [] { throw std::runtime_error("no"); });
  std::promise<std::exception_ptr> got;
  async_wait(failing.launch(queue), [&](std::exception_ptr e) { got.set_value(e); });
  const std::exception_ptr e = got.get_future().get();  // on Asio's system executor
  REQUIRE(e);
  CMDGRAPH_EXPECT_ERROR(std::rethrow_exception(e), errc::host_task_failed);
  try {
    queue.wait();
  } catch (const Error&) {
  }
}

TEST_CASE("asio.context_destroyed_before_the_fence_signals" * doctest::timeout(30)) {
  Queue queue(Device::host());
  std::atomic<bool> release{false};
  Executable gate = host_exe("gate", [&] {
    while (!release) std::this_thread::sleep_for(1ms);
  });
  auto owned = std::make_shared<int>(0);
  const std::weak_ptr<int> handler_alive = owned;
  bool called = false;
  Fence fence = gate.launch(queue);
  {
    asio::io_context io;
    async_wait(fence, asio::bind_executor(io, [&called, owned = std::move(owned)](
                                                  std::exception_ptr) { called = true; }));
  }  // destroyed with the wait pending: its handler goes with it, uncalled
  CHECK(handler_alive.expired());
  release = true;
  // Callbacks of one fence run in order on cmdgraph's callback thread: once this one ran, the
  // abandoned wait has found its context gone.
  fence.then([] {}).wait();
  CHECK_FALSE(called);
}

#if BOOST_VERSION >= 108000
TEST_CASE("asio.deferred" * doctest::timeout(30)) {
  Queue queue(Device::host());
  std::atomic<int> runs{0};
  Executable exe = slow_exe(runs);
  auto op = async_wait(exe.launch(queue), asio::deferred);  // nothing waits yet
  std::future<void> done = std::move(op)(asio::use_future);
  done.get();
  CHECK(runs == 1);
}
#endif
