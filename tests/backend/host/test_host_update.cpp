// Updates on the host backend: values change for later launches only; re-recorded buffers
// replace the values in place or are refused with the differing command named.
#include "support/expect_error.hpp"

#include <cmdgraph/cmdgraph.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <thread>

using namespace cmdgraph;
using namespace std::chrono_literals;

namespace {

struct Set {
  int* out;
  int value;
  void operator()(std::size_t i) const { out[i] = value; }
};

}  // namespace

TEST_CASE("host.update.parallel_for_copy_fill" * doctest::timeout(30)) {
  std::vector<int> a(8, -1), b(8, -1), c(8, -1), d(8, -1);
  CommandBuffer cmd("u");
  auto set = cmd.parallel_for(4, Set{a.data(), 1});
  auto copy = cmd.copy(host_view(b.data(), 8), host_view(a.data(), 8), 4).after(set);
  auto fill = cmd.fill(host_view(c.data(), 8), 7, 2);
  Executable exe = compile(cmd, Device::host());
  Queue q(Device::host());
  exe.launch(q).wait();
  CHECK(a[0] == 1);
  CHECK(b[3] == 1);
  CHECK(b[4] == -1);
  CHECK(c[1] == 7);

  exe.update(set, 6, Set{a.data(), 2});                              // new functor and range
  exe.update(copy, host_view(d.data(), 8), host_view(a.data(), 8), 6);  // new destination
  exe.update(fill, host_view(c.data(), 8), 9, 3);
  exe.launch(q).wait();
  CHECK(a[5] == 2);
  CHECK(d[5] == 2);
  CHECK(b[0] == 1);  // the old destination is left alone
  CHECK(c[2] == 9);
}

TEST_CASE("host.update.launch_in_flight_keeps_its_values" * doctest::timeout(30)) {
  std::atomic<bool> open{false};
  std::vector<int> out(1, 0);
  CommandBuffer cmd("inflight");
  auto gate = cmd.host([&] {
    while (!open) std::this_thread::sleep_for(50us);
  });
  auto set = cmd.parallel_for(1, Set{out.data(), 1}).after(gate);
  Executable exe = compile(cmd, Device::host());
  Queue q(Device::host());
  Fence first = exe.launch(q);
  exe.update(set, Set{out.data(), 2});  // while the first launch waits at the gate
  open = true;
  first.wait();
  CHECK(out[0] == 1);
  exe.launch(q).wait();
  CHECK(out[0] == 2);
}

TEST_CASE("host.update.rejects_bad_values_and_foreign_handles" * doctest::timeout(30)) {
  std::vector<int> a(4);
  CommandBuffer cmd("u");
  auto fill = cmd.fill(host_view(a.data(), 4), 1, 4).named("f");
  Executable exe = compile(cmd, Device::host());
  auto e = CMDGRAPH_EXPECT_ERROR(exe.update(fill, host_view(a.data(), 4), 1, 5), errc::invalid_argument);
  REQUIRE(e);
  CHECK(e->commands() == std::vector<std::string>{"f"});
  CMDGRAPH_EXPECT_ERROR(
      exe.update(fill, View<int>(a.data(), 4, MemorySpace::device, 0), 1, 4), errc::device_mismatch);
  CommandBuffer other("other");
  auto foreign = other.fill(host_view(a.data(), 4), 1, 4);
  CMDGRAPH_EXPECT_ERROR(exe.update(foreign, host_view(a.data(), 4), 1, 4), errc::foreign_handle);
  FillCommand<int> none;
  CMDGRAPH_EXPECT_ERROR(exe.update(none, host_view(a.data(), 4), 1, 4), errc::invalid_handle);
}

TEST_CASE("host.update.rerecorded_buffer" * doctest::timeout(30)) {
  std::vector<int> out(4, 0);
  auto record = [&](CommandBuffer& cmd, int value, bool extra) {
    auto a = cmd.parallel_for(4, Set{out.data(), value}).named("set");
    cmd.host([] {}).after(a).named("after");
    if (extra) cmd.host([] {}).named("extra");
  };
  CommandBuffer first("v1");
  record(first, 1, false);
  Executable exe = compile(first, Device::host());
  Queue q(Device::host());

  CommandBuffer same("v2");
  record(same, 2, false);
  const UpdateResult in_place = exe.update(same);
  CHECK_FALSE(in_place.reinstantiated);
  CHECK(same.sealed());
  exe.launch(q).wait();
  CHECK(out[3] == 2);

  CommandBuffer bigger("v3");
  record(bigger, 3, true);
  auto e = CMDGRAPH_EXPECT_ERROR(exe.update(bigger), errc::update_refused);
  REQUIRE(e);
  CHECK(cmdgraph::testing::mentions(*e, "3 commands"));
  CHECK_FALSE(bigger.sealed());  // refused: nothing changed
  exe.launch(q).wait();
  CHECK(out[3] == 2);

  const UpdateResult rebuilt = exe.update(bigger, {.reinstantiate_if_needed = true});
  CHECK(rebuilt.reinstantiated);
  CHECK_FALSE(rebuilt.reason.empty());
  exe.launch(q).wait();
  CHECK(out[3] == 3);
  CHECK(exe.stats().commands == 2);  // compile-time figures stay those of the first build
}

TEST_CASE("host.update.refusal_names_the_command" * doctest::timeout(30)) {
  CommandBuffer a("a"), b("b");
  auto x = a.host([] {}).named("x");
  a.host([] {}).named("y").after(x);
  b.host([] {}).named("x");
  b.host([] {}).named("y");  // the edge is gone
  Executable exe = compile(a, Device::host());
  auto e = CMDGRAPH_EXPECT_ERROR(exe.update(b), errc::update_refused);
  REQUIRE(e);
  CHECK(e->commands() == std::vector<std::string>{"x"});
}
