// Every bad input of the record and build stages: the right errc, the commands named, and
// nothing lost or leaked.
#include "record/recording.hpp"
#include "support/expect_error.hpp"

#include <cmdgraph/cmdgraph.hpp>

#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

using namespace cmdgraph;
using cmdgraph::testing::mentions;

namespace {
void kernel_stub(int, float*) {}
using Kernel = void (*)(int, float*);
}  // namespace

TEST_CASE("validation.self_edge" * doctest::timeout(10)) {
  CommandBuffer cmd("step");
  auto a = cmd.host([] {}).named("load");
  auto e = CMDGRAPH_EXPECT_ERROR(a.after(a), errc::self_edge);
  REQUIRE(e);
  CHECK(e->commands() == std::vector<std::string>{"load"});
  CHECK(mentions(*e, "'load'"));
  CHECK(mentions(*e, "'step'"));
}

TEST_CASE("validation.cycle.named_in_order" * doctest::timeout(10)) {
  CommandBuffer cmd("loop");
  auto a = cmd.host([] {}).named("a");
  auto b = cmd.host([] {}).named("b").after(a);
  auto c = cmd.host([] {}).named("c").after(b);
  cmd.host([] {}).named("bystander").after(a);
  a.after(c);
  auto e = CMDGRAPH_EXPECT_ERROR(compile(cmd, Device::host()), errc::cycle);
  REQUIRE(e);
  // The whole cycle, in edge order, from any starting point.
  auto names = e->commands();
  REQUIRE(names.size() == 3);
  std::rotate(names.begin(), std::find(names.begin(), names.end(), "a"), names.end());
  CHECK(names == std::vector<std::string>{"a", "b", "c"});
  CHECK_FALSE(mentions(*e, "bystander"));
  CHECK(mentions(*e, "->"));
  CHECK_FALSE(cmd.sealed());  // a failed compile leaves the buffer as it was
}

TEST_CASE("validation.cycle.long" * doctest::timeout(30)) {
  CommandBuffer cmd("ring");
  std::vector<Command> ring;
  for (int i = 0; i < 5000; ++i) {
    ring.push_back(cmd.host([] {}));
    if (i) ring.back().after(ring[i - 1]);
  }
  ring.front().after(ring.back());
  auto e = CMDGRAPH_EXPECT_ERROR(compile(cmd, Device::host()), errc::cycle);
  REQUIRE(e);
  CHECK(e->commands().size() == 5000);
}

TEST_CASE("validation.cycle.through_barrier" * doctest::timeout(10)) {
  CommandBuffer cmd("bar");
  auto a = cmd.host([] {}).named("before");
  cmd.barrier();
  auto b = cmd.host([] {}).named("after");
  a.after(b);  // contradicts the barrier
  auto e = CMDGRAPH_EXPECT_ERROR(compile(cmd, Device::host()), errc::cycle);
  REQUIRE(e);
  CHECK(e->commands().size() == 3);
  CHECK(mentions(*e, "barrier#1"));
}

TEST_CASE("validation.duplicate_edge.deduplicated" * doctest::timeout(10)) {
  CommandBuffer cmd("dup");
  auto a = cmd.host([] {});
  auto b = cmd.host([] {}).after(a, a);
  b.after(a);
  Executable exe = compile(cmd, Device::host());
  CHECK(exe.stats().edges_recorded == 1);
  CHECK(exe.stats().edges_reduced == 1);
}

TEST_CASE("validation.handle.foreign" * doctest::timeout(10)) {
  CommandBuffer one("one"), two("two");
  auto a = one.host([] {}).named("a");
  auto b = two.host([] {}).named("b");
  auto e = CMDGRAPH_EXPECT_ERROR(b.after(a), errc::foreign_handle);
  REQUIRE(e);
  CHECK(e->commands() == std::vector<std::string>{"b", "a"});
  CHECK(mentions(*e, "'one'"));
  CHECK(mentions(*e, "'two'"));
}

TEST_CASE("validation.handle.default_constructed" * doctest::timeout(10)) {
  CommandBuffer cmd("d");
  auto a = cmd.host([] {});
  Command nothing;
  CMDGRAPH_EXPECT_ERROR(a.after(nothing), errc::invalid_handle);
  CMDGRAPH_EXPECT_ERROR(nothing.after(a), errc::invalid_handle);
  CMDGRAPH_EXPECT_ERROR(nothing.named("x"), errc::invalid_handle);
}

TEST_CASE("validation.handle.moved_from" * doctest::timeout(10)) {
  CommandBuffer cmd("m");
  auto a = cmd.host([] {});
  auto b = cmd.host([] {});
  Command taken = std::move(a);
  CHECK_FALSE(a.valid());
  CMDGRAPH_EXPECT_ERROR(b.after(a), errc::invalid_handle);
  b.after(taken);
}

TEST_CASE("validation.handle.stale_after_destroy" * doctest::timeout(10)) {
  Command orphan;
  {
    CommandBuffer gone("gone");
    orphan = gone.host([] {});
  }
  CommandBuffer cmd("c");
  auto a = cmd.host([] {});
  auto e = CMDGRAPH_EXPECT_ERROR(a.after(orphan), errc::stale_handle);
  REQUIRE(e);
  // The error names the buffer the handle came from and the command's place in it.
  CHECK(cmdgraph::testing::mentions(*e, "command #0 of command buffer 'gone'"));
  CMDGRAPH_EXPECT_ERROR(orphan.named("x"), errc::stale_handle);
  CMDGRAPH_EXPECT_ERROR((void)orphan.name(), errc::stale_handle);
}

TEST_CASE("validation.handle.stale_after_reset" * doctest::timeout(10)) {
  CommandBuffer cmd("c");
  auto old = cmd.host([] {});
  cmd.reset();
  auto fresh = cmd.host([] {});
  auto e = CMDGRAPH_EXPECT_ERROR(fresh.after(old), errc::stale_handle);
  REQUIRE(e);
  CHECK(cmdgraph::testing::mentions(*e, "command #0 of command buffer 'c'"));
}

TEST_CASE("validation.state.record_after_compile" * doctest::timeout(10)) {
  CommandBuffer cmd("sealed");
  auto a = cmd.host([] {});
  compile(cmd, Device::host());
  auto e = CMDGRAPH_EXPECT_ERROR(cmd.host([] {}), errc::wrong_state);
  REQUIRE(e);
  CHECK(mentions(*e, "'sealed'"));
  CMDGRAPH_EXPECT_ERROR(cmd.barrier(), errc::wrong_state);
  CMDGRAPH_EXPECT_ERROR(a.named("late"), errc::wrong_state);
  auto b = Command(a);
  CMDGRAPH_EXPECT_ERROR(b.after(a), errc::wrong_state);
  CHECK(cmd.size() == 1);
}

TEST_CASE("validation.state.moved_from_buffer" * doctest::timeout(10)) {
  CommandBuffer cmd("x");
  CommandBuffer other = std::move(cmd);
  CMDGRAPH_EXPECT_ERROR(cmd.host([] {}), errc::invalid_handle);
  CMDGRAPH_EXPECT_ERROR(compile(cmd, Device::host()), errc::invalid_handle);
  CMDGRAPH_EXPECT_ERROR(other.execute(cmd), errc::invalid_handle);
}

TEST_CASE("validation.execute.itself" * doctest::timeout(10)) {
  CommandBuffer cmd("self");
  CMDGRAPH_EXPECT_ERROR(cmd.execute(cmd), errc::invalid_argument);
  CHECK(cmd.size() == 0);
}

TEST_CASE("validation.copy.bad_ranges" * doctest::timeout(10)) {
  CommandBuffer cmd("copies");
  std::vector<float> a(8), b(8);
  auto e = CMDGRAPH_EXPECT_ERROR(cmd.copy(host_view(a.data(), 8), host_view(b.data(), 8), 0),
                                 errc::invalid_argument);
  REQUIRE(e);
  CHECK(e->commands() == std::vector<std::string>{"copy#0"});
  CHECK(mentions(*e, "zero-size"));
  CMDGRAPH_EXPECT_ERROR(cmd.copy(host_view<float>(nullptr, 8), host_view(b.data(), 8), 8),
                        errc::invalid_argument);
  CMDGRAPH_EXPECT_ERROR(cmd.copy(host_view(a.data(), 8), host_view<float>(nullptr, 8), 8),
                        errc::invalid_argument);
  auto over = CMDGRAPH_EXPECT_ERROR(cmd.copy(host_view(a.data(), 4), host_view(b.data(), 8), 8),
                                    errc::invalid_argument);
  REQUIRE(over);
  CHECK(mentions(*over, "destination holds 4 elements (16 bytes)"));
  CHECK(cmd.size() == 0);  // nothing half-recorded
}

TEST_CASE("validation.fill.bad_ranges" * doctest::timeout(10)) {
  CommandBuffer cmd("fills");
  std::vector<int> a(8);
  CMDGRAPH_EXPECT_ERROR(cmd.fill(host_view(a.data(), 8), 1, 0), errc::invalid_argument);
  CMDGRAPH_EXPECT_ERROR(cmd.fill(host_view<int>(nullptr, 8), 1, 8), errc::invalid_argument);
  CMDGRAPH_EXPECT_ERROR(cmd.fill(host_view(a.data(), 8), 1, 9), errc::invalid_argument);
}

TEST_CASE("validation.kernel.null_and_zero_dimensions" * doctest::timeout(10)) {
  CommandBuffer cmd("kernels");
  float* p = nullptr;
  auto e = CMDGRAPH_EXPECT_ERROR(cmd.launch(Kernel{nullptr}, LaunchConfig{{1}, {1}}, 1, p),
                                 errc::invalid_argument);
  REQUIRE(e);
  CHECK(e->commands() == std::vector<std::string>{"kernel#0"});
  CMDGRAPH_EXPECT_ERROR(cmd.launch(&kernel_stub, LaunchConfig{{0}, {32}}, 1, p),
                        errc::invalid_argument);
  CMDGRAPH_EXPECT_ERROR(cmd.launch(&kernel_stub, LaunchConfig{{1, 0}, {32}}, 1, p),
                        errc::invalid_argument);
  CMDGRAPH_EXPECT_ERROR(cmd.launch(&kernel_stub, LaunchConfig{{1}, {32, 1, 0}}, 1, p),
                        errc::invalid_argument);
  CHECK(cmd.size() == 0);
  CHECK(detail::recording_of(cmd)->arguments().slot_count() == 0);  // no orphaned argument bytes
}

TEST_CASE("validation.parallel_for.zero_size" * doctest::timeout(10)) {
  CommandBuffer cmd("pf");
  CMDGRAPH_EXPECT_ERROR(cmd.parallel_for(0, [](std::size_t) {}), errc::invalid_argument);
}

TEST_CASE("validation.event.moved_from" * doctest::timeout(10)) {
  CommandBuffer cmd("ev");
  Event ev(Device::host());
  Event taken = std::move(ev);
  CMDGRAPH_EXPECT_ERROR(cmd.record(ev), errc::invalid_handle);
  CMDGRAPH_EXPECT_ERROR(cmd.wait(ev), errc::invalid_handle);
  cmd.record(taken);
}

TEST_CASE("validation.host_backend.refuses_gpu_only_commands" * doctest::timeout(10)) {
  SUBCASE("kernel") {
    CommandBuffer cmd("gpu");
    float* p = nullptr;
    cmd.launch(&kernel_stub, LaunchConfig{{1}, {1}}, 1, p).named("k");
    auto e = CMDGRAPH_EXPECT_ERROR(compile(cmd, Device::host()), errc::unsupported);
    REQUIRE(e);
    CHECK(e->commands() == std::vector<std::string>{"k"});
    CHECK(mentions(*e, "'gpu'") == false);
    CHECK_FALSE(cmd.sealed());
  }
  SUBCASE("capture") {
    CommandBuffer cmd("gpu");
    cmd.capture([](NativeStream) {}).named("lib");
    auto e = CMDGRAPH_EXPECT_ERROR(compile(cmd, Device::host()), errc::unsupported);
    REQUIRE(e);
    CHECK(e->commands() == std::vector<std::string>{"lib"});
  }
  SUBCASE("device memory, even inside a nested buffer") {
    CommandBuffer inner("inner");
    inner.fill(View<int>(reinterpret_cast<int*>(64), 4, MemorySpace::device, 0), 0, 4).named("f");
    CommandBuffer outer("outer");
    outer.execute(inner);
    auto e = CMDGRAPH_EXPECT_ERROR(compile(outer, Device::host()), errc::device_mismatch);
    REQUIRE(e);
    CHECK(e->commands() == std::vector<std::string>{"inner/f"});
  }
  SUBCASE("a CUDA backend on the host device") {
    CommandBuffer cmd("x");
    cmd.host([] {});
    CMDGRAPH_EXPECT_ERROR(compile(cmd, Device::host(), {.backend = Backend::cuda_graph}),
                          errc::unsupported);
    CMDGRAPH_EXPECT_ERROR(compile(cmd, Device::host(), {.backend = Backend::streams}),
                          errc::unsupported);
  }
}

TEST_CASE("validation.failed_compile_leaks_nothing" * doctest::timeout(10)) {
  auto token = std::make_shared<int>(0);
  {
    CommandBuffer cmd("leak");
    auto a = cmd.host([token] {});
    auto b = cmd.host([token] {}).after(a);
    a.after(b);
    CHECK(token.use_count() == 3);
    CMDGRAPH_EXPECT_ERROR(compile(cmd, Device::host()), errc::cycle);
    CHECK(token.use_count() == 3);  // the buffer still holds its commands, nothing else does
  }
  CHECK(token.use_count() == 1);
}

TEST_CASE("validation.executable.empty_or_moved_from" * doctest::timeout(10)) {
  Queue q(Device::host());
  Executable none;
  CMDGRAPH_EXPECT_ERROR(none.launch(q), errc::invalid_handle);
  CommandBuffer cmd("x");
  cmd.host([] {});
  Executable exe = compile(cmd, Device::host());
  Executable taken = std::move(exe);
  CMDGRAPH_EXPECT_ERROR(exe.launch(q), errc::invalid_handle);
  taken.launch(q).wait();
}

TEST_CASE("validation.error_code_category" * doctest::timeout(10)) {
  const std::error_code ec = errc::cycle;
  CHECK(ec.category().name() == std::string("cmdgraph"));
  CHECK(ec.message() == "cycle");
  const Error e(errc::timeout, "late", {"a"});
  CHECK(e.error_code() == errc::timeout);
  CHECK(e.cuda_status() == 0);
}

namespace {
// "recorded at test_validation.cpp:LINE": how a refused command is placed.
std::string recorded_at(int line) {
  return "(recorded at test_validation.cpp:" + std::to_string(line) + ")";
}
void takes_unsigned(unsigned) {}
}  // namespace

// Issue 36, item 3: a command refused while recording has no name yet; its error says where
// the call was made, for every kind of record call (values, kernels, bodies, transients).
TEST_CASE("validation.refused_commands_say_where_they_were_recorded" * doctest::timeout(10)) {
  HostBuffer<int> a(8), b(8);
  CommandBuffer cmd("frame");
  cmd.host([] {});
  // An overlapping copy, a count larger than the buffer, a value that does not fit.
  auto e = CMDGRAPH_EXPECT_ERROR(cmd.copy(a.subview(1, 4), a.subview(0, 4), 4),
                                 errc::invalid_argument);
  const int copy_line = __LINE__ - 2;
  REQUIRE(e);
  CHECK(mentions(*e, "command buffer 'frame': copy#1 " + recorded_at(copy_line) +
                         ": source and destination overlap"));
  CHECK(e->commands() == std::vector<std::string>{"copy#1"});
  e = CMDGRAPH_EXPECT_ERROR(cmd.fill(b, 0, 9), errc::invalid_argument);
  CHECK(mentions(*e, "fill#1 " + recorded_at(__LINE__ - 1)));
  e = CMDGRAPH_EXPECT_ERROR(cmd.launch(&takes_unsigned, {{1}, {1}}, -1),
                            errc::invalid_argument);
  CHECK(mentions(*e, "kernel#1 " + recorded_at(__LINE__ - 2) + ": argument 1 (-1)"));
  // Every spelling of a launch's config converts: a LaunchConfig, braced dimensions, {}.
  CHECK(cmd.launch(&takes_unsigned, {}, 1u).name() == "kernel#1");
  CHECK(cmd.launch(&takes_unsigned, {{2}, {32}, 64}, 1u).name() == "kernel#2");
  cmd.reset();
  cmd.host([] {});
  e = CMDGRAPH_EXPECT_ERROR(cmd.launch(&takes_unsigned, LaunchConfig{{0}, {1}}, 1u),
                            errc::invalid_argument);
  CHECK(mentions(*e, "kernel#1 " + recorded_at(__LINE__ - 2)));
  e = CMDGRAPH_EXPECT_ERROR(cmd.alloc<int>(0), errc::invalid_argument);
  CHECK(mentions(*e, "alloc#1 " + recorded_at(__LINE__ - 1)));
  e = CMDGRAPH_EXPECT_ERROR(cmd.execute(cmd), errc::invalid_argument);
  CHECK(mentions(*e, "execute#1 " + recorded_at(__LINE__ - 1)));
  e = CMDGRAPH_EXPECT_ERROR(
      cmd.parallel_for_indirect(View<std::uint32_t>{}, 4, [](std::size_t) {}),
      errc::invalid_argument);
  CHECK(mentions(*e, "indirect#1 " + recorded_at(__LINE__ - 3)));
  CHECK(cmd.size() == 1);  // nothing refused was recorded
  // Once recorded, a command is named by its own name, where it was recorded no longer needed.
  auto copy = cmd.copy(b, a, 8).named("upload");
  e = CMDGRAPH_EXPECT_ERROR(copy.after(copy), errc::self_edge);
  CHECK(mentions(*e, "upload"));
  CHECK_FALSE(mentions(*e, "recorded at"));
}
