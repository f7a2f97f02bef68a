// What a careless or hostile user still broke (issue 31): memory freed under a host launch,
// typed handles of another type, fences gone while awaited, ranges that wrap, transients of
// another buffer declared, edge kinds out of range, unordered copies and fills.
#include "support/expect_error.hpp"

#include <cmdgraph/cmdgraph.hpp>
#include <cmdgraph/task.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <thread>
#include <vector>

using namespace cmdgraph;
using namespace std::chrono_literals;

namespace {

// A host task that holds its launch until `open` is set.
struct Gate {
  std::atomic<bool> open{false};
  void hold() const {
    while (!open.load()) std::this_thread::sleep_for(1ms);
  }
};

// Allocates and scribbles on buffers of `count` elements, which take the place of memory
// freed under a launch, if any was: its copy then reads the scribbles.
template <class T>
void scribble_over_freed_memory(std::size_t count) {
  std::vector<Buffer<T>> taken;
  for (int k = 0; k < 8; ++k) {
    taken.emplace_back(Device::host(), count);
    std::memset(static_cast<void*>(taken.back().data()), 0x5a, count * sizeof(T));
  }
}

// Copies `src` into `dst` after a gated host task; returns the launch's fence.
template <class Memory>
Fence launch_gated_copy(Gate& gate, Memory& dst, const Memory& src, Queue& queue,
                        Executable& exe) {
  CommandBuffer cmd("in flight");
  auto held = cmd.host([&gate] { gate.hold(); }).named("held");
  cmd.copy(dst, src, src.size()).after(held).named("copy");
  exe = compile(cmd, Device::host());
  return exe.launch(queue);
}

struct Small {
  int* out;
  void operator()(std::size_t i) const { out[i] = 1; }
};
struct Large {
  int* out;
  int values[16];
  void operator()(std::size_t i) const { out[i] = values[i % 16]; }
};

}  // namespace

TEST_CASE("reliability.host_buffer_freed_while_a_launch_uses_it" * doctest::timeout(60)) {
  // ~Buffer freed host memory while the copy still ran (ASan: heap-use-after-free in the host
  // copy); the memory is now released once the launches submitted before have finished.
  Queue queue(Device::host());
  Gate gate;
  auto src = std::make_unique<Buffer<int>>(Device::host(), 1024);
  Buffer<int> dst(Device::host(), 1024);
  for (std::size_t i = 0; i < 1024; ++i) src->data()[i] = static_cast<int>(i);
  Executable exe;
  const Fence done = launch_gated_copy(gate, dst, *src, queue, exe);
  src.reset();  // returns at once: the launch is held
  CHECK_FALSE(done.ready());
  scribble_over_freed_memory<int>(1024);
  gate.open = true;
  done.wait();
  for (std::size_t i = 0; i < 1024; ++i) REQUIRE(dst.data()[i] == static_cast<int>(i));
}

TEST_CASE("reliability.host_buffer_of_staging_memory_freed_while_in_use" * doctest::timeout(60)) {
  Queue queue(Device::host());
  Gate gate;
  auto src = std::make_unique<HostBuffer<int>>(512);
  HostBuffer<int> dst(512);
  for (std::size_t i = 0; i < 512; ++i) (*src)[i] = 7;
  Executable exe;
  const Fence done = launch_gated_copy(gate, dst, *src, queue, exe);
  src.reset();
  scribble_over_freed_memory<int>(512);
  gate.open = true;
  done.wait();
  for (std::size_t i = 0; i < 512; ++i) REQUIRE(dst[i] == 7);
}

TEST_CASE("reliability.freeing_never_waits_for_work_it_would_release" * doctest::timeout(60)) {
  // A free behind a submission that waits for a semaphore this thread signals later must not
  // wait for it (that hung the fuzz replay), and a host task may free memory while its own
  // launch runs: both are deferred.
  Queue queue(Device::host());
  TimelineSemaphore go(0);
  auto src = std::make_unique<Buffer<int>>(Device::host(), 256);
  Buffer<int> dst(Device::host(), 256);
  for (std::size_t i = 0; i < 256; ++i) src->data()[i] = 3;
  CommandBuffer cmd("waits");
  cmd.copy(dst, *src, 256).named("copy");
  Executable exe = compile(cmd, Device::host());
  const Fence done = queue.submit(exe, {.wait = {{go, 1}}});
  src.reset();
  scribble_over_freed_memory<int>(256);
  go.signal(1);
  done.wait();
  CHECK(dst.data()[255] == 3);

  auto scratch = std::make_unique<Buffer<int>>(Device::host(), 64);
  CommandBuffer frees("frees");
  auto free_it = frees.host([&scratch] { scratch.reset(); }).named("free it");
  frees.fill(dst, 5, 256).after(free_it).named("after");
  compile(frees, Device::host()).launch(queue).wait();
  CHECK(scratch == nullptr);
  CHECK(dst.data()[0] == 5);
}

TEST_CASE("reliability.typed_update_of_another_type_is_refused" * doctest::timeout(30)) {
  // A ParallelForCommand<Small> made from a Large command's reference made update() copy
  // Large's size from a Small (ASan: stack-buffer-overflow); the type is checked now.
  Buffer<int> out(Device::host(), 16);
  CommandBuffer cmd("typed");
  Large large{out.data(), {}};
  for (int i = 0; i < 16; ++i) large.values[i] = 5;
  auto pf = cmd.parallel_for(16, large).named("large");
  Buffer<double> wide(Device::host(), 4), wide_src(Device::host(), 4);
  auto copy = cmd.copy(wide, wide_src, 4).after(pf).named("wide copy");
  auto fill = cmd.fill(out, 0, 16).after(copy).named("zero");
  Executable exe = compile(cmd, Device::host());

  const ParallelForCommand<Small> forged(pf.ref());
  auto e = CMDGRAPH_EXPECT_ERROR(exe.update(forged, Small{out.data()}), errc::invalid_argument);
  REQUIRE(e);
  CHECK(e->commands() == std::vector<std::string>{"large"});
  CHECK(testing::mentions(*e, "functor type"));

  Buffer<int> narrow(Device::host(), 8), narrow_src(Device::host(), 8);
  const CopyCommand<int> forged_copy(copy.ref());
  e = CMDGRAPH_EXPECT_ERROR(exe.update(forged_copy, narrow, narrow_src, 8),
                            errc::invalid_argument);
  REQUIRE(e);
  CHECK(e->commands() == std::vector<std::string>{"wide copy"});
  CHECK(testing::mentions(*e, "element type"));

  Buffer<std::uint8_t> bytes(Device::host(), 16);
  const FillCommand<std::uint8_t> forged_fill(fill.ref());
  e = CMDGRAPH_EXPECT_ERROR(exe.update(forged_fill, bytes, 1, 16), errc::invalid_argument);
  REQUIRE(e);
  CHECK(e->commands() == std::vector<std::string>{"zero"});

  // The handle of the right type still updates, and the refusals changed nothing.
  Queue queue(Device::host());
  for (std::size_t i = 0; i < 4; ++i) wide_src.data()[i] = 2.5;
  exe.launch(queue).wait();
  CHECK(out.data()[15] == 0);
  CHECK(wide.data()[3] == 2.5);
  large.values[15] = 9;
  exe.update(pf, large);
  exe.update(fill, out, 3, 8);
  exe.launch(queue).wait();
  CHECK(out.data()[0] == 3);
  CHECK(out.data()[15] == 9);
}

TEST_CASE("reliability.fence_destroyed_or_reassigned_while_awaited" * doctest::timeout(60)) {
  // The awaiter held a pointer to the Fence co_awaited: destroyed while the coroutine was
  // suspended, the resumption read freed memory (ASan: heap-use-after-free in Fence::wait);
  // reassigned, it rethrew the other fence's error.
  Queue queue(Device::host());
  Gate gate;
  CommandBuffer held("held");
  held.host([&gate] { gate.hold(); });
  Executable exe = compile(held, Device::host());
  CommandBuffer failing("failing");
  failing.host([] { throw std::runtime_error("boom"); }).named("fails");
  Executable bad = compile(failing, Device::host());
  Queue other(Device::host());
  const Fence failed = bad.launch(other);
  CHECK_THROWS_AS(failed.wait(), Error);

  auto destroyed = std::make_unique<Fence>(exe.launch(queue));
  Executable twin = exe.clone();
  Fence reassigned = twin.launch(other);  // held by the gate too
  std::atomic<int> resumed{0};
  auto await_one = [&resumed](const Fence& f) -> Task<> {
    co_await f;
    ++resumed;
  };
  Task<> first = await_one(*destroyed);
  Task<> second = await_one(reassigned);
  destroyed.reset();
  reassigned = failed;
  gate.open = true;
  first.get();
  second.get();  // the work it awaited succeeded: no error of the fence assigned since
  CHECK(resumed == 2);
}

TEST_CASE("reliability.views_that_wrap_are_refused" * doctest::timeout(30)) {
  // Ranges past the top of the address space were accepted, and hazards between them missed.
  constexpr auto top = std::numeric_limits<std::uintptr_t>::max();
  auto* last16 = reinterpret_cast<char*>(top - 15);
  auto e = CMDGRAPH_EXPECT_ERROR(host_view(last16, 16), errc::invalid_argument);
  REQUIRE(e);
  CHECK(testing::mentions(*e, "past the top of the address space"));
  CHECK_NOTHROW(host_view(last16, 15));  // ends at the last byte
  Buffer<char> real(Device::host(), 64);
  CMDGRAPH_EXPECT_ERROR(host_view(real.data(), std::numeric_limits<std::size_t>::max() - 3),
                        errc::invalid_argument);
  CMDGRAPH_EXPECT_ERROR(device_view(reinterpret_cast<int*>(top - 7), 4, Device::host()),
                        errc::invalid_argument);
  CMDGRAPH_EXPECT_ERROR(View<std::uint64_t>(reinterpret_cast<std::uint64_t*>(top - 63), 8,
                                            MemorySpace::host, -1),
                        errc::invalid_argument);
}

TEST_CASE("reliability.declaring_another_buffers_transient_is_refused" * doctest::timeout(30)) {
  CommandBuffer owner("owner");
  auto t = owner.alloc<int>(64);
  owner.free(t).after(t);
  CommandBuffer other("other");
  auto task = other.host([] {}).named("reader");
  auto e = CMDGRAPH_EXPECT_ERROR(task.reads(t), errc::foreign_handle);
  REQUIRE(e);
  CHECK(e->commands() == std::vector<std::string>{"reader"});
  CMDGRAPH_EXPECT_ERROR(task.writes(t.view().subview(8, 8)), errc::foreign_handle);
  // Nothing was declared: the buffer compiles and runs, and its own transients stay usable.
  auto mine = other.alloc<int>(8);
  other.host([] {}).reads(mine).after(mine, task).named("own reader");
  Executable exe = compile(other, Device::host());
  Queue queue(Device::host());
  exe.launch(queue).wait();
  CHECK(exe.stats().accesses_declared == 1);
}

TEST_CASE("reliability.edge_kind_out_of_range_is_refused" * doctest::timeout(30)) {
  CommandBuffer cmd("edges");
  auto a = cmd.host([] {}).named("a");
  auto b = cmd.host([] {}).named("b");
  auto e = CMDGRAPH_EXPECT_ERROR(b.after(a, static_cast<EdgeKind>(9)), errc::invalid_argument);
  REQUIRE(e);
  CHECK(e->commands() == std::vector<std::string>{"b"});
  CHECK(testing::mentions(*e, "not an EdgeKind"));
  CHECK(compile(cmd, Device::host()).stats().edges_recorded == 0);  // nothing was added
}

TEST_CASE("reliability.unordered_copies_and_fills_are_hazards_by_default" *
          doctest::timeout(30)) {
  // Two unordered fills of the same memory passed under Hazards::automatic, which validated
  // only declared access; copies and fills touch memory the plan sees, so it validates them.
  Buffer<int> buffer(Device::host(), 64), other(Device::host(), 64);
  {
    CommandBuffer cmd("fills");
    cmd.fill(buffer, 1, 64).named("one");
    cmd.fill(buffer.subview(48, 16), 2, 16).named("two");
    auto e = CMDGRAPH_EXPECT_ERROR(compile(cmd, Device::host()), errc::hazard);
    REQUIRE(e);
    CHECK(e->commands() == std::vector<std::string>{"one", "two"});
    CHECK(testing::mentions(*e, "write-after-write"));
  }
  {
    CommandBuffer cmd("copies");
    cmd.copy(other, buffer, 64).named("out");
    cmd.fill(buffer, 3, 64).named("overwrite");
    CMDGRAPH_EXPECT_ERROR(compile(cmd, Device::host()), errc::hazard);
  }
  {
    // Ordered, or apart, they compile; disjoint ranges never conflict.
    CommandBuffer cmd("ordered");
    auto one = cmd.fill(buffer.subview(0, 32), 1, 32).named("low");
    cmd.fill(buffer.subview(32, 32), 2, 32).named("high");
    cmd.copy(other, buffer, 64).after(one).named("late");
    auto e = CMDGRAPH_EXPECT_ERROR(compile(cmd, Device::host()), errc::hazard);
    REQUIRE(e);
    CHECK(e->commands() == std::vector<std::string>{"high", "late"});
  }
}
