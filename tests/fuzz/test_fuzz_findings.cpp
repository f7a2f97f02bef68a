// Library bugs the fuzzer found. All fixed: they guard against regressions. Overruns are
// checked at record or update time (never run, so one cannot happen here even if it came
// back); hangs with bounded waits.
#include "support/expect_error.hpp"

#include <cmdgraph/cmdgraph.hpp>

#include <doctest/doctest.h>

#include <chrono>
#include <stdexcept>
#include <vector>

using namespace cmdgraph;
using namespace std::chrono_literals;

// validate.cpp used to skip the capacity check for empty views (capacity 0), so any count into
// or out of an empty, non-null view was accepted and overran the memory when it ran.
TEST_CASE("fuzz.finding.fill_into_empty_view" * doctest::timeout(10)) {
  std::vector<int> memory(4);
  CommandBuffer cmd("overrun");
  CMDGRAPH_EXPECT_ERROR(cmd.fill(host_view(memory.data() + 4, 0), 7, 4), errc::invalid_argument);
}

TEST_CASE("fuzz.finding.copy_from_empty_view" * doctest::timeout(10)) {
  std::vector<int> memory(4), out(4);
  CommandBuffer cmd("overread");
  CMDGRAPH_EXPECT_ERROR(cmd.copy(host_view(out.data(), 4), host_view(memory.data() + 4, 0), 4),
                        errc::invalid_argument);
}

TEST_CASE("fuzz.finding.update_fill_into_empty_view" * doctest::timeout(10)) {
  std::vector<int> memory(4);
  CommandBuffer cmd("overrun on update");
  auto fill = cmd.fill(host_view(memory.data(), 4), 7, 4);
  Executable exe = compile(cmd, Device::host());
  CMDGRAPH_EXPECT_ERROR(exe.update(fill, host_view(memory.data() + 4, 0), 7, 4),
                        errc::invalid_argument);
}

// View::subview added its offset to a null pointer (UBSan: applying non-zero offset to null
// pointer, memory.hpp) for a null view with a size, as host_view(nullptr, n) makes one.
TEST_CASE("fuzz.finding.subview_of_null_view" * doctest::timeout(10)) {
  const View<int> null = host_view<int>(nullptr, 2);
  const View<int> part = null.subview(1, 1);
  CHECK(part.data() == nullptr);
  CHECK(part.size() == 1);
  CommandBuffer cmd("null");
  CMDGRAPH_EXPECT_ERROR(cmd.fill(part, 7, 1), errc::invalid_argument);
}

// The host backend skips the dependants of a failed host task; a skipped event record left the
// generation its launch had begun for it unfinished, so every later wait for the event (a
// queue's, a command's, Event::wait) hung forever and ready() stayed false. The fuzzer's input
// hung at the end, in the queue's destructor.
TEST_CASE("fuzz.finding.skipped_record_ends_its_wait" * doctest::timeout(30)) {
  Event event(Device::host());
  Queue queue(Device::host()), other(Device::host());
  CommandBuffer cmd("fails before its record");
  const Command failing = cmd.host([] { throw std::runtime_error("on purpose"); });
  cmd.record(event).after(failing);
  Executable exe = compile(cmd, Device::host());
  CMDGRAPH_EXPECT_ERROR(exe.launch(queue).wait(), errc::host_task_failed);
  CHECK(event.ready());
  other.wait(event);
  CHECK(other.wait_for(5s));
  CommandBuffer waiting("waits for it");
  waiting.wait(event);
  Executable waiter = compile(waiting, Device::host());
  CHECK(waiter.launch(other).wait_for(5s));
  CHECK(event.ready());
}
