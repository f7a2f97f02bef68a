// Semantics a new user hit (issue 20), on the host backend: an event wait sees the latest
// record submitted before it, across queues; refused updates name the first difference;
// updates with a handle of another buffer name that command; and on every backend, errors
// reported by every wait that covers them.
#include "support/backends.hpp"
#include "support/expect_error.hpp"

#include <cmdgraph/cmdgraph.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using namespace cmdgraph;
using namespace std::chrono_literals;

TEST_CASE("reliability.event_wait_sees_the_record_submitted_before_it" * doctest::timeout(30)) {
  // A record inside a launch on one queue, a wait inside a later launch on another: the wait
  // follows the record although the record's command has not run yet when the waiting launch
  // starts (it read the event's state as it ran, and so did not wait).
  const Device host = Device::host();
  Event ready(host);
  std::atomic<int> value{0};
  CommandBuffer producer("producer");
  auto work = producer.host([&] {
    std::this_thread::sleep_for(30ms);
    value = 42;
  });
  producer.record(ready).after(work);
  CommandBuffer consumer("consumer");
  auto wait = consumer.wait(ready);
  int seen = -1;
  consumer.host([&] { seen = value; }).after(wait);
  Executable a = compile(producer, host), b = compile(consumer, host);
  Queue qa(host), qb(host);
  for (int round = 0; round < 3; ++round) {
    value = 0;
    seen = -1;
    a.launch(qa);
    b.launch(qb).wait();
    CHECK(seen == 42);
    qa.wait();
  }
}

TEST_CASE("reliability.event_wait_before_any_record_does_not_wait" * doctest::timeout(30)) {
  // The other half of the rule: a record submitted after the wait is not waited for.
  const Device host = Device::host();
  Event never(host);
  CommandBuffer consumer("consumer");
  auto wait = consumer.wait(never);
  bool ran = false;
  consumer.host([&] { ran = true; }).after(wait);
  Queue q(host);
  compile(consumer, host).launch(q).wait();
  CHECK(ran);
}

TEST_CASE("reliability.refused_update_names_the_first_difference" * doctest::timeout(30)) {
  const Device host = Device::host();
  CommandBuffer frame("frame");
  auto a = frame.host([] {}).named("a");
  frame.host([] {}).named("b").after(a);
  Executable exe = compile(frame, host);

  CommandBuffer longer("frame");
  auto a2 = longer.host([] {}).named("a");
  longer.host([] {}).named("b").after(a2);
  longer.host([] {}).named("extra");
  auto e = CMDGRAPH_EXPECT_ERROR(exe.update(longer), errc::update_refused);
  REQUIRE(e);
  CHECK(e->commands() == std::vector<std::string>{"extra"});
  CHECK(testing::mentions(*e, "3 commands, the executable 2"));
  CHECK(testing::mentions(*e, "'extra' is new"));

  CommandBuffer rewired("frame");
  auto a3 = rewired.host([] {}).named("a");
  auto b3 = rewired.host([] {}).named("b");
  rewired.depends_on(a3, b3);  // b -> a instead of a -> b
  e = CMDGRAPH_EXPECT_ERROR(exe.update(rewired), errc::update_refused);
  REQUIRE(e);
  CHECK(e->commands() == std::vector<std::string>{"a"});
  CHECK(testing::mentions(*e, "lost its edge to 'b'"));
}

TEST_CASE("reliability.update_with_a_foreign_handle_names_it" * doctest::timeout(30)) {
  const Device host = Device::host();
  int x = 0;
  CommandBuffer mine("mine");
  mine.fill(host_view(&x, 1), 1, 1).named("set");
  Executable exe = compile(mine, host);
  CommandBuffer other("other");
  auto theirs = other.fill(host_view(&x, 1), 2, 1).named("theirs");
  auto e = CMDGRAPH_EXPECT_ERROR(exe.update(theirs, host_view(&x, 1), 3, 1), errc::foreign_handle);
  REQUIRE(e);
  CHECK(e->commands() == std::vector<std::string>{"other/theirs"});
  CHECK(testing::mentions(*e, "'other/theirs'"));
}

TEST_CASE("reliability.profile_names_executed_commands" * doctest::timeout(30)) {
  // As on the CUDA backends: the execute command itself (its span), then "buffer/name".
  CommandBuffer inner("inner");
  inner.host([] {}).named("set");
  CommandBuffer outer("outer");
  auto run = outer.execute(inner).named("step");
  outer.host([] {}).named("after").after(run);
  Executable exe = compile(outer, Device::host(), {.profile = true});
  Queue q(Device::host());
  exe.launch(q).wait();
  std::vector<std::string> names;
  for (const CommandTiming& c : exe.last_profile().commands) names.push_back(c.name);
  CHECK(names == std::vector<std::string>{"step", "after", "inner/set"});
}

TEST_CASE("reliability.then_callback_errors_are_cmdgraph_errors" * doctest::timeout(30)) {
  // A then() callback that threw a std::runtime_error rethrew it raw, while every other wait
  // rethrows cmdgraph::Error with the original nested.
  Queue q(Device::host());
  CommandBuffer cmd("work");
  cmd.host([] {});
  Executable exe = compile(cmd, Device::host());
  Fence raw = exe.launch(q).then([] { throw std::runtime_error("callback failed"); });
  try {
    raw.wait();
    FAIL("the callback's exception was lost");
  } catch (const Error& e) {
    CHECK(e.code() == errc::host_task_failed);
    CHECK(testing::mentions(e, "callback failed"));
    try {
      std::rethrow_if_nested(e);
      FAIL("the original is not nested");
    } catch (const std::runtime_error& original) {
      CHECK(std::string(original.what()) == "callback failed");
    }
  }
  Fence ours = exe.launch(q).then([] { throw Error(errc::timeout, "gave up"); });
  auto e = CMDGRAPH_EXPECT_ERROR(ours.wait(), errc::timeout);  // a cmdgraph::Error as it is
  REQUIRE(e);
  CHECK(std::string(e->what()) == "gave up");
  q.wait();
}

TEST_CASE("reliability.errors_are_reported_by_every_wait_that_covers_them" * doctest::timeout(60)) {
  // One rule on every backend: a fence reports its launch's error each time it is waited on,
  // and the queue's next wait reports it too; the queue wait after that starts afresh. A
  // continuation's exception is its fence's error, and the queue's.
  CMDGRAPH_EACH_BACKEND(on) {
    Queue q(on.device);
    CommandBuffer cmd("fails");
    cmd.host([] { throw std::runtime_error("boom"); }).named("bad");
    Executable exe = compile(cmd, on.device, on.options());
    Fence f = exe.launch(q);
    CMDGRAPH_EXPECT_ERROR(f.wait(), errc::host_task_failed);
    CMDGRAPH_EXPECT_ERROR(f.wait(), errc::host_task_failed);
    auto e = CMDGRAPH_EXPECT_ERROR(q.wait(), errc::host_task_failed);
    REQUIRE(e);
    CHECK(e->commands() == std::vector<std::string>{"bad"});
    q.wait();  // reported: this wait covers nothing new
    CMDGRAPH_EXPECT_ERROR(f.wait(), errc::host_task_failed);  // the fence still holds it
    Fence raw = exe.launch(q).then([](std::exception_ptr) { throw std::runtime_error("late"); });
    auto c = CMDGRAPH_EXPECT_ERROR(raw.wait(), errc::host_task_failed);
    REQUIRE(c);
    CHECK(testing::mentions(*c, "late"));
    CMDGRAPH_EXPECT_ERROR(q.wait(), errc::host_task_failed);
  }
}
