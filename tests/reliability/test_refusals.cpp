// Misuse that used to pass silently or half-way (issue 20, low items): a refused after_all()
// keeps nothing, queue pools refuse impossible sizes and priorities, narrowing arguments and
// fill values are refused, overlapping copies are refused, a host signal at or above a pending
// one is refused. Every refusal is a cmdgraph::Error naming the command where there is one.
#include "record/recording.hpp"
#include "support/expect_error.hpp"

#include <cmdgraph/cmdgraph.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <vector>

using namespace cmdgraph;
using cmdgraph::testing::mentions;

namespace {

// Kernels by signature only: recording stores the pointer; nothing here compiles them.
void takes_int(int) {}
void takes_float(float) {}
void takes_unsigned(unsigned) {}
void takes_byte(std::uint8_t) {}
void takes_double_and_int(double, int) {}
void takes_nothing() {}

template <class P, class A>
constexpr bool launch_compiles =
    requires(CommandBuffer& c, void (*k)(P), A a) { c.launch(k, LaunchConfig{}, a); };
template <class P, class A>
constexpr bool update_compiles =
    requires(Executable& e, KernelCommand<P> k, A a) { e.update(k, a); };

}  // namespace

TEST_CASE("reliability.refused_after_all_records_nothing") {
  CommandBuffer cmd("edges");
  Command y = cmd.host([] {});
  Command x = cmd.host([] {});
  const std::vector<Command> parents{y, x};
  const auto e = CMDGRAPH_EXPECT_ERROR(x.after_all(parents), errc::self_edge);
  REQUIRE(e);
  CHECK(mentions(*e, "host#1"));
  CHECK(detail::recording_of(cmd)->edges().empty());  // not even y -> x
  // A stale handle among the parents: nothing either.
  CommandBuffer other("other");
  const std::vector<Command> mixed{y, other.host([] {})};
  CMDGRAPH_EXPECT_ERROR(x.after_all(mixed), errc::foreign_handle);
  CHECK(detail::recording_of(cmd)->edges().empty());
  x.after_all(std::vector<Command>{y});
  CHECK(detail::recording_of(cmd)->edges().size() == 1);
}

TEST_CASE("reliability.queue_pool_refuses_impossible_requests") {
  CMDGRAPH_EXPECT_ERROR(QueuePool(Device::host(), std::size_t{1} << 40), errc::invalid_argument);
  CMDGRAPH_EXPECT_ERROR(QueuePool(Device::host(), 0), errc::invalid_argument);
  QueuePool pool(Device::host(), 2);
  const auto e =
      CMDGRAPH_EXPECT_ERROR(pool.acquire(static_cast<Priority>(7)), errc::invalid_argument);
  REQUIRE(e);
  CHECK(mentions(*e, "7"));
  CHECK(pool.acquire(Priority::high).device() == Device::host());
}

// Narrowing arguments for launch() (3.9 -> 3) fail in a static_assert naming the argument:
// the test compile_errors compiles such programs.
TEST_CASE("reliability.narrowing_kernel_arguments_do_not_compile") {
  CHECK_FALSE(update_compiles<int, double>);
  CHECK(launch_compiles<float, double>);  // 2.0 for a float parameter, as the README shows
  CHECK(launch_compiles<double, int>);
  CHECK(launch_compiles<int, long>);  // checked when recorded
  CHECK(update_compiles<float, double>);
}

TEST_CASE("reliability.out_of_range_kernel_arguments_refused") {
  CommandBuffer cmd("args");
  const LaunchConfig cfg{};
  const auto big =
      CMDGRAPH_EXPECT_ERROR(cmd.launch(takes_float, cfg, 1e40), errc::invalid_argument);
  REQUIRE(big);
  CHECK(mentions(*big, "kernel#0"));
  CHECK(mentions(*big, "1e+40"));
  CHECK(big->commands() == std::vector<std::string>{"kernel#0"});
  const auto neg =
      CMDGRAPH_EXPECT_ERROR(cmd.launch(takes_unsigned, cfg, -1), errc::invalid_argument);
  REQUIRE(neg);
  CHECK(mentions(*neg, "argument 1 (-1)"));
  CHECK(mentions(*neg, "unsigned 32-bit integer"));
  CMDGRAPH_EXPECT_ERROR(cmd.launch(takes_byte, cfg, 300), errc::invalid_argument);
  CMDGRAPH_EXPECT_ERROR(cmd.launch(takes_int, cfg, std::int64_t{1} << 40), errc::invalid_argument);
  const auto second =
      CMDGRAPH_EXPECT_ERROR(cmd.launch(takes_double_and_int, cfg, 1.0, 5'000'000'000LL),
                            errc::invalid_argument);
  REQUIRE(second);
  CHECK(mentions(*second, "argument 2"));
  CHECK(cmd.size() == 0);
  // What fits is recorded.
  cmd.launch(takes_float, cfg, 2.0);
  cmd.launch(takes_float, cfg, std::numeric_limits<double>::infinity());
  cmd.launch(takes_unsigned, cfg, 7);
  cmd.launch(takes_byte, cfg, 255);
  cmd.launch(takes_int, cfg, -5L);
  cmd.launch(takes_double_and_int, cfg, 1.0f, 'a');
  cmd.launch(takes_nothing, cfg);
  CHECK(cmd.size() == 7);
}

TEST_CASE("reliability.out_of_range_fill_values_refused") {
  Buffer<std::uint8_t> bytes(Device::host(), 16);
  Buffer<float> floats(Device::host(), 16);
  Buffer<std::int16_t> shorts(Device::host(), 16);
  CommandBuffer cmd("fills");
  const auto e = CMDGRAPH_EXPECT_ERROR(cmd.fill(bytes, 300, 16), errc::invalid_argument);
  REQUIRE(e);
  CHECK(mentions(*e, "fill#0"));
  CHECK(mentions(*e, "300"));
  CMDGRAPH_EXPECT_ERROR(cmd.fill(bytes, -1, 16), errc::invalid_argument);
  CMDGRAPH_EXPECT_ERROR(cmd.fill(floats, 1e40, 16), errc::invalid_argument);
  CMDGRAPH_EXPECT_ERROR(cmd.fill(shorts, 40000, 16), errc::invalid_argument);
  CHECK(cmd.size() == 0);
  auto fill = cmd.fill(bytes, 255, 16);
  cmd.fill(floats, 2.5, 16);
  cmd.fill(shorts, -32768, 16);
  Executable exe = compile(cmd, Device::host());
  const auto u = CMDGRAPH_EXPECT_ERROR(exe.update(fill, bytes, 256, 16), errc::invalid_argument);
  REQUIRE(u);
  CHECK(mentions(*u, "fill#0"));
  Queue q(Device::host());
  exe.launch(q).wait();
  CHECK(bytes.data()[15] == 255);
  CHECK(floats.data()[0] == 2.5f);
}

TEST_CASE("reliability.overlapping_copy_refused") {
  Buffer<int> a(Device::host(), 16), b(Device::host(), 16);
  CommandBuffer cmd("copies");
  cmd.host([] {}).named("first");
  const auto e = CMDGRAPH_EXPECT_ERROR(cmd.copy(a.subview(4, 8), a.subview(0, 8), 8),
                                       errc::invalid_argument);
  REQUIRE(e);
  CHECK(mentions(*e, "copy#1"));
  CHECK(mentions(*e, "overlap"));
  CMDGRAPH_EXPECT_ERROR(cmd.copy(a, a, 16), errc::invalid_argument);
  CMDGRAPH_EXPECT_ERROR(cmd.copy(a.subview(0, 8), a.subview(7, 8), 8), errc::invalid_argument);
  CHECK(cmd.size() == 1);
  auto adjacent = cmd.copy(a.subview(8, 8), a.subview(0, 8), 8);  // adjacent, not overlapping
  auto copy = cmd.copy(b, a, 16).after(adjacent);
  Executable exe = compile(cmd, Device::host());
  const auto u = CMDGRAPH_EXPECT_ERROR(exe.update(copy, a.subview(1, 8), a.subview(0, 8), 8),
                                       errc::invalid_argument);
  REQUIRE(u);
  CHECK(mentions(*u, "copy#2"));
}

TEST_CASE("reliability.host_signal_at_or_above_pending_signal_refused" * doctest::timeout(60)) {
  TimelineSemaphore gate(0), timeline(0);
  CommandBuffer cmd("signals");
  cmd.host([] {});
  Executable exe = compile(cmd, Device::host());
  Queue q(Device::host());
  // Held until `gate` reaches 1; will signal 10 once it ran.
  Fence f = q.submit(exe, {.wait = {{gate, 1}}, .signal = {{timeline, 10}}});
  struct Open {  // however the test ends, the queue's destructor finds its work released
    TimelineSemaphore& gate;
    ~Open() {
      if (gate.value() < 1) gate.signal(1);
    }
  } open{gate};
  // Vulkan's rule: a host signal stays below the pending ones, else the value would fall back
  // from 12 to 10 when the submission lands. Below them is how the host steps a timeline.
  const auto e = CMDGRAPH_EXPECT_ERROR(timeline.signal(12), errc::invalid_argument);
  REQUIRE(e);
  CHECK(mentions(*e, "10"));
  CMDGRAPH_EXPECT_ERROR(timeline.signal(10), errc::invalid_argument);
  CHECK(timeline.value() == 0);
  timeline.signal(5);
  CHECK(timeline.value() == 5);
  gate.signal(1);
  REQUIRE(f.wait_for(std::chrono::seconds(30)));
  CHECK(timeline.value() == 10);
  timeline.signal(11);
  CHECK(timeline.value() == 11);
}

// A submission that waits for a value and signals the same semaphore no higher could only run
// once nothing could release it (the host may not signal at or above a pending signal): found
// by the fuzzer, whose input then hung in the queue's destructor. Refused, nothing claimed.
TEST_CASE("reliability.signal_at_or_below_own_wait_refused" * doctest::timeout(60)) {
  TimelineSemaphore s(0);
  CommandBuffer cmd("stepper");
  cmd.host([] {});
  Executable exe = compile(cmd, Device::host());
  Queue q(Device::host());
  const auto e = CMDGRAPH_EXPECT_ERROR(q.submit(exe, {.wait = {{s, 5}}, .signal = {{s, 5}}}),
                                       errc::invalid_argument);
  REQUIRE(e);
  CHECK(mentions(*e, "stepper"));
  CHECK(mentions(*e, "5"));
  CMDGRAPH_EXPECT_ERROR(q.submit(exe, {.wait = {{s, 5}}, .signal = {{s, 3}}}),
                        errc::invalid_argument);
  // Nothing was claimed: a signal of 4 is still free to take, and the host may step below it.
  Fence f = q.submit(exe, {.wait = {{s, 2}}, .signal = {{s, 4}}});
  s.signal(2);
  REQUIRE(f.wait_for(std::chrono::seconds(30)));
  CHECK(s.value() == 4);
}
