// Memory operations (write_value, wait_value) on every backend this machine runs: what they
// write and wait for, their order against the work around them, updates, and refusals.
#include "support/backends.hpp"
#include "support/expect_error.hpp"

#include <cmdgraph/cmdgraph.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>

using namespace cmdgraph;
using cmdgraph::testing::mentions;

namespace {

// The value a host thread sees at `p`, read as a poller would.
template <class T>
T seen(T* p) {
  return std::atomic_ref<T>(*p).load(std::memory_order_acquire);
}

}  // namespace

TEST_CASE("memory_ops.write_value_follows_the_work" * doctest::timeout(60)) {
  CMDGRAPH_EACH_BACKEND(on) {
    HostBuffer<int> src(256), dst(256);
    HostBuffer<std::uint32_t> flag(1);
    HostBuffer<std::uint64_t> wide(1);
    for (int i = 0; i < 256; ++i) src[i] = 3 * i + 1;
    CommandBuffer cmd("publish");
    auto poison = cmd.fill(dst, -1, 256);
    auto copy = cmd.copy(dst, src, 256).after(poison);
    cmd.write_value(flag, 7u).after(copy).named("ready");
    cmd.write_value(wide, std::uint64_t{1} << 40 | 5).after(copy);
    Executable exe = compile(cmd, on.device, on.options());
    Queue q(on.device);
    for (int round = 0; round < 3; ++round) {
      flag[0] = 0;
      wide[0] = 0;
      Fence done = exe.launch(q);
      // A poller that sees the flag sees the copy: the write follows the work and is fenced.
      while (seen(flag.data()) != 7u) {
      }
      for (int i = 0; i < 256; ++i) REQUIRE(dst[i] == 3 * i + 1);
      done.wait();
      CHECK(seen(wide.data()) == (std::uint64_t{1} << 40 | 5));
    }
  }
}

TEST_CASE("memory_ops.write_value_updates_in_place" * doctest::timeout(60)) {
  CMDGRAPH_EACH_BACKEND(on) {
    HostBuffer<std::uint32_t> a(1), b(2);
    a[0] = b[0] = b[1] = 0;
    CommandBuffer cmd("flags");
    auto write = cmd.write_value(a, 1u);
    Executable exe = compile(cmd, on.device, on.options());
    Queue q(on.device);
    exe.launch(q).wait();
    CHECK(a[0] == 1u);
    exe.update(write, b.subview(1, 1), 9u);
    exe.launch(q).wait();
    CHECK(b[1] == 9u);
    CHECK(b[0] == 0u);
    CHECK(a[0] == 1u);
    // Another kind's handle of the same recording is refused, naming the command.
    auto e = CMDGRAPH_EXPECT_ERROR(
        exe.update(ValueCommand<CommandKind::write_value, std::uint64_t>(write.ref()),
                   HostBuffer<std::uint64_t>(1), std::uint64_t{2}),
        errc::invalid_argument);
    REQUIRE(e);
    CHECK(mentions(*e, "element type"));
    exe.launch(q).wait();
    CHECK(b[1] == 9u);
  }
}

TEST_CASE("memory_ops.write_value_refusals" * doctest::timeout(60)) {
  HostBuffer<std::uint32_t> flags(4);
  CommandBuffer cmd("bad");
  auto e = CMDGRAPH_EXPECT_ERROR(cmd.write_value(View<std::uint32_t>(), 1u),
                                 errc::invalid_argument);
  REQUIRE(e);
  CHECK(e->commands() == std::vector<std::string>{"write_value#0"});
  auto* misaligned = reinterpret_cast<std::uint32_t*>(
      reinterpret_cast<std::uintptr_t>(flags.data()) + 2);
  e = CMDGRAPH_EXPECT_ERROR(cmd.write_value(host_view(misaligned, 1), 1u),
                            errc::invalid_argument);
  REQUIRE(e);
  CHECK(mentions(*e, "aligned"));
  CHECK(cmd.size() == 0);  // nothing recorded

  // Unordered writes of one flag race: refused at compile, naming both.
  CommandBuffer race("race");
  race.write_value(flags, 1u).named("first");
  race.write_value(flags, 2u).named("second");
  e = CMDGRAPH_EXPECT_ERROR(compile(race, Device::host()), errc::hazard);
  REQUIRE(e);
  CHECK(mentions(*e, "first"));
  CHECK(mentions(*e, "second"));

  if (Device::count() > 0) {
    // A GPU's memory operation reaches device and pinned memory, not pageable memory.
    std::uint32_t pageable = 0;
    CommandBuffer host_target("pageable");
    host_target.write_value(host_view(&pageable, 1), 1u).named("to_pageable");
    for (Backend backend : {Backend::cuda_graph, Backend::streams}) {
      e = CMDGRAPH_EXPECT_ERROR(compile(host_target, Device::cuda(0), {.backend = backend}),
                                errc::unsupported);
      REQUIRE(e);
      CHECK(e->commands() == std::vector<std::string>{"to_pageable"});
    }
  }
}
