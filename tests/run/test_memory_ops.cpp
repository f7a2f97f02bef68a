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

namespace {

// Writes `value` at `p` as another thread of a producer would.
template <class T>
void publish(T* p, T value) {
  std::atomic_ref<T>(*p).store(value, std::memory_order_release);
}

}  // namespace

TEST_CASE("memory_ops.wait_value_holds_the_work_until_the_value" * doctest::timeout(60)) {
  CMDGRAPH_EACH_BACKEND(on) {
    // The gated work runs on the executable's device (a host-to-host copy in a CUDA launch is
    // the host's work, not the GPU's).
    HostBuffer<int> src(64), seen_dst(64);
    Buffer<int> staged(on.device, 64), dst(on.device, 64);
    HostBuffer<std::uint32_t> go(1), done(1);
    for (int i = 0; i < 64; ++i) src[i] = i * i;
    go[0] = 0;
    CommandBuffer stage("stage"), read("read");
    stage.copy(staged, src, 64);
    read.copy(seen_dst, dst, 64);
    Executable staging = compile(stage, on.device, on.options());
    Executable reading = compile(read, on.device, on.options());
    CommandBuffer cmd("gated");
    auto poison = cmd.fill(dst, -1, 64);
    auto wait = cmd.wait_value(go, 1u, ValueCompare::at_least).named("gate").after(poison);
    auto copy = cmd.copy(dst, staged, 64).after(wait);
    cmd.write_value(done, 1u).after(copy);
    Executable exe = compile(cmd, on.device, on.options());
    Queue q(on.device);
    staging.launch(q).wait();
    for (std::uint32_t round = 1; round <= 3; ++round) {
      done[0] = 0;
      exe.update(wait, go, round);  // each launch waits for the next value
      Fence f = exe.launch(q);
      // Nothing after the wait can run before the value is there: no timing involved.
      CHECK_FALSE(f.ready());
      CHECK(seen(done.data()) == 0u);
      publish(go.data(), round);
      f.wait();
      CHECK(seen(done.data()) == 1u);
      for (int i = 0; i < 64; ++i) seen_dst[i] = -7;
      reading.launch(q).wait();
      for (int i = 0; i < 64; ++i) REQUIRE(seen_dst[i] == i * i);
    }
  }
}

TEST_CASE("memory_ops.wait_value_compares_as_cuda_does" * doctest::timeout(60)) {
  CMDGRAPH_EACH_BACKEND(on) {
    struct Case {
      ValueCompare compare;
      std::uint32_t waited, before, after;  // `before` does not satisfy it, `after` does
    };
    const Case cases[] = {
        {ValueCompare::equal, 42, 41, 42},
        {ValueCompare::any_bit, 0b100, 0b011, 0b110},
        // The comparison wraps: 5 is "after" 0xFFFFFFFA, as a counter that passed the top.
        {ValueCompare::at_least, 0xFFFFFFFAu, 0xFFFFFFF0u, 5},
    };
    for (const Case& c : cases) {
      CAPTURE(static_cast<int>(c.compare));
      HostBuffer<std::uint32_t> value(1), done(1);
      value[0] = c.before;
      done[0] = 0;
      CommandBuffer cmd("compare");
      auto wait = cmd.wait_value(value, c.waited, c.compare);
      cmd.write_value(done, 1u).after(wait);
      Executable exe = compile(cmd, on.device, on.options());
      Queue q(on.device);
      Fence f = exe.launch(q);
      CHECK_FALSE(f.ready());
      publish(value.data(), c.after);
      f.wait();
      CHECK(seen(done.data()) == 1u);
    }
  }
}

TEST_CASE("memory_ops.wait_value_64_bit" * doctest::timeout(60)) {
  CMDGRAPH_EACH_BACKEND(on) {
    HostBuffer<std::uint64_t> counter(1);
    HostBuffer<std::uint32_t> done(1);
    counter[0] = std::uint64_t{1} << 33;
    done[0] = 0;
    CommandBuffer cmd("wide");
    auto wait = cmd.wait_value(counter, (std::uint64_t{1} << 33) + 2, ValueCompare::equal);
    cmd.write_value(done, 1u).after(wait);
    Executable exe = compile(cmd, on.device, on.options());
    Queue q(on.device);
    Fence f = exe.launch(q);
    publish(counter.data(), (std::uint64_t{1} << 33) + 1);
    CHECK_FALSE(f.wait_for(std::chrono::milliseconds(5)));  // not the value yet: still waits
    publish(counter.data(), (std::uint64_t{1} << 33) + 2);
    f.wait();
    CHECK(seen(done.data()) == 1u);
  }
}

TEST_CASE("memory_ops.wait_value_refusals" * doctest::timeout(60)) {
  HostBuffer<std::uint32_t> flag(1);
  CommandBuffer cmd("bad");
  auto e = CMDGRAPH_EXPECT_ERROR(cmd.wait_value(View<std::uint32_t>(), 1u, ValueCompare::equal),
                                 errc::invalid_argument);
  REQUIRE(e);
  CHECK(e->commands() == std::vector<std::string>{"wait_value#0"});
  // A wait and a write of one flag, unordered, race.
  CommandBuffer race("race");
  race.wait_value(flag, 1u, ValueCompare::equal).named("waiter");
  race.write_value(flag, 1u).named("writer");
  e = CMDGRAPH_EXPECT_ERROR(compile(race, Device::host()), errc::hazard);
  REQUIRE(e);
  CHECK(mentions(*e, "waiter"));
  CHECK(mentions(*e, "writer"));
}
