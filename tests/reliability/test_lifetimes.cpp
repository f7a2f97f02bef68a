// Lifetimes and bounds as hostile input (issue 20): semaphores moved, reallocated or destroyed
// while submissions use them, executables destroyed in flight, failed submissions that must
// change nothing, nesting that would overflow the stack or expand without bound.
#include "support/expect_error.hpp"

#include <cmdgraph/cmdgraph.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

using namespace cmdgraph;
using namespace std::chrono_literals;

namespace {

// An executable whose one host task sleeps, so submissions stay pending for a while.
Executable slow_executable(std::atomic<int>& runs) {
  CommandBuffer cmd("slow");
  cmd.host([&runs] {
    std::this_thread::sleep_for(20ms);
    ++runs;
  });
  return compile(cmd, Device::host());
}

// Made before main runs, so destroyed after everything made while it ran: the library's
// registries of open recordings and live transient ranges included, which are made at their
// first use.
std::optional<CommandBuffer> buffer_kept_past_main;
std::optional<Executable> executable_kept_past_main;

}  // namespace

TEST_CASE("reliability.a_buffer_and_executable_kept_in_statics_end_after_main" *
          doctest::timeout(30)) {
  // They end during static destruction, after main: the buffer closes its recording, the
  // executable releases transient memory. The registries they report to outlive them, so the
  // process exits cleanly (the test program fails if it does not; seen crashing 1 run in 5 with
  // MALLOC_PERTURB_ set, and every run under ASan, while the registries were destroyed first).
  CommandBuffer& cmd = buffer_kept_past_main.emplace("kept past main");
  std::vector<float> out(64, -1.0f);
  auto scratch = cmd.alloc<float>(out.size()).named("scratch");
  auto fill = cmd.fill(scratch, 2.0f, out.size()).after(scratch).named("fill");
  auto save = cmd.copy(host_view(out.data(), out.size()), scratch, out.size()).after(fill);
  cmd.free(scratch).after(save);
  Executable& exe = executable_kept_past_main.emplace(compile(cmd, Device::host()));
  Queue q(Device::host());
  exe.launch(q).wait();
  CHECK(out == std::vector<float>(out.size(), 2.0f));
  CHECK(exe.stats().transients == 1);
}

TEST_CASE("reliability.semaphore_reallocated_while_in_use" * doctest::timeout(30)) {
  // A submission shares its semaphores' state: growing the vector that holds them (which moves
  // every semaphore) neither crashes nor loses a signal or a wait (ASan saw a use-after-free).
  std::atomic<int> runs{0};
  Executable exe = slow_executable(runs);
  Queue producer(Device::host()), consumer(Device::host());
  std::vector<TimelineSemaphore> s;
  s.emplace_back(0);
  producer.submit(exe, {.signal = {{s[0], 1}}});
  Executable waiting = exe.clone();
  consumer.submit(waiting, {.wait = {{s[0], 1}}, .signal = {{s[0], 2}}});
  for (int i = 0; i < 64; ++i) s.emplace_back(0);  // reallocates: s[0] is a moved-to object
  producer.wait();
  consumer.wait();
  CHECK(s[0].value() == 2);
  CHECK(runs == 2);
}

TEST_CASE("reliability.semaphore_destroyed_while_in_use" * doctest::timeout(30)) {
  std::atomic<int> runs{0};
  Executable exe = slow_executable(runs);
  Queue q(Device::host());
  {
    TimelineSemaphore done(0);
    q.submit(exe, {.signal = {{done, 1}}});
  }  // the handle is gone; the submission still signals its state
  q.wait();
  CHECK(runs == 1);
  TimelineSemaphore moved(0);
  TimelineSemaphore taker = std::move(moved);
  CMDGRAPH_EXPECT_ERROR(q.submit(exe, {.signal = {{moved, 1}}}), errc::invalid_handle);
  CMDGRAPH_EXPECT_ERROR(q.submit(exe, {.wait = {{moved, 1}}}), errc::invalid_handle);
}

TEST_CASE("reliability.failed_submit_changes_nothing" * doctest::timeout(30)) {
  // A submission refused part-way through its signal list leaves no claim behind: a later
  // submission may signal a lower value.
  std::atomic<int> runs{0};
  Executable exe = slow_executable(runs);
  Queue q(Device::host());
  TimelineSemaphore a(0), gone(0);
  TimelineSemaphore taker = std::move(gone);
  CMDGRAPH_EXPECT_ERROR(q.submit(exe, {.signal = {{a, 5}, {gone, 1}}}), errc::invalid_handle);
  q.submit(exe, {.signal = {{a, 3}}});  // refused before: 5 was still claimed
  q.wait();
  CHECK(a.value() == 3);
  CHECK(runs == 1);
}

TEST_CASE("reliability.executable_destroyed_in_flight_waits" * doctest::timeout(30)) {
  // The tasks reach memory freed right after the executable: its destructor must wait for
  // them (ASan saw a use-after-free while it returned at once).
  Queue q(Device::host());
  auto data = std::make_unique<std::vector<int>>(1024, 0);
  {
    CommandBuffer cmd("writer");
    cmd.host([p = data.get()] {
      std::this_thread::sleep_for(20ms);
      (*p)[0] = 1;
    });
    Executable exe = compile(cmd, Device::host());
    exe.launch(q);
  }
  CHECK((*data)[0] == 1);
  data.reset();
  q.wait();
}

TEST_CASE("reliability.nesting_is_bounded" * doctest::timeout(60)) {
  // Deep nesting overflowed the stack in the plan build (17-20k levels, 1k under ASan); the
  // bound refuses it at record time, naming the command.
  std::vector<CommandBuffer> levels;
  levels.reserve(80);
  levels.emplace_back("level0");
  levels.back().host([] {});
  std::optional<Error> refused;
  for (int i = 1; i < 80 && !refused; ++i) {
    CommandBuffer next("level" + std::to_string(i));
    try {
      next.execute(levels.back());
    } catch (const Error& e) {
      refused = e;
      CHECK_FALSE(levels.back().sealed());  // a refused execute does not seal its input
      break;
    }
    levels.push_back(std::move(next));
  }
  REQUIRE(refused);
  CHECK(refused->code() == errc::invalid_argument);
  CHECK(testing::mentions(*refused, "at most 64"));
  CHECK(refused->commands() == std::vector<std::string>{"execute#0"});
  CHECK(levels.size() == 65);  // 64 levels of executed buffers below the top one
  // The deepest allowed one compiles and runs.
  Queue q(Device::host());
  compile(levels.back(), Device::host()).launch(q).wait();
}

TEST_CASE("reliability.exponential_expansion_is_refused" * doctest::timeout(60)) {
  // Executing the previous level twice per level doubles the size: compile() hung at depth 40.
  // Past 10 million expanded commands the recording refuses, naming the buffer and command.
  std::vector<CommandBuffer> levels;
  levels.reserve(40);
  levels.emplace_back("twice0");
  levels.back().host([] {});
  std::optional<Error> refused;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 1; i < 40 && !refused; ++i) {
    CommandBuffer next("twice" + std::to_string(i));
    try {
      next.execute(levels.back());
      next.execute(levels.back());
    } catch (const Error& e) {
      refused = e;
      break;
    }
    levels.push_back(std::move(next));
  }
  REQUIRE(refused);
  CHECK(testing::mentions(*refused, "10000000"));
  CHECK(testing::mentions(*refused, "twice"));
  CHECK(refused->commands() == std::vector<std::string>{"execute#1"});
  CHECK(std::chrono::steady_clock::now() - start < 10s);
}
