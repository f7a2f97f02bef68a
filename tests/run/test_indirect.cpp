// Indirect commands (parallel_for_indirect, launch_indirect) as the host backend runs them and
// every backend records them: a count read as the command runs, written by the commands before
// it; clamping and its report; refusals that name the command. The CUDA backends' run is in
// tests/cuda/test_cuda_indirect.cu.
#include "support/expect_error.hpp"

#include <cmdgraph/cmdgraph.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

using namespace cmdgraph;
using cmdgraph::testing::mentions;

namespace {

struct Mark {
  int* out;
  void operator()(std::size_t i) const { out[i] += 1; }
};

// Stands in for a __global__ kernel when recording (the host backend refuses to run it).
void not_a_kernel(int*) {}

}  // namespace

TEST_CASE("indirect.host_runs_the_count_written_before_it" * doctest::timeout(60)) {
  const Device host = Device::host();
  HostBuffer<int> out(5000);
  HostBuffer<std::uint32_t> count(1);
  CommandBuffer cmd("frontier");
  auto poison = cmd.fill(out, -7, 5000);
  auto size = cmd.write_value(count, 0u).named("size");
  auto zero = cmd.fill(out, 0, 4096).after(poison);
  cmd.parallel_for_indirect(count, 4096, Mark{out.data()}).after(size, zero).named("visit");
  Executable exe = compile(cmd, host);
  Queue q(host);
  for (std::uint32_t asked : {0u, 1u, 7u, 4096u, 4097u, 100000u}) {
    CAPTURE(asked);
    exe.update(size, count, asked);  // the count comes from a command of the same launch
    exe.launch(q).wait();
    const std::uint32_t ran = asked < 4096u ? asked : 4096u;
    for (std::uint32_t i = 0; i < 4096; ++i) REQUIRE(out[i] == (i < ran ? 1 : 0));
    for (std::uint32_t i = 4096; i < 5000; ++i) REQUIRE(out[i] == -7);
  }
  // Two launches asked beyond 4,096: 4,097 and 100,000.
  const auto clamped = exe.clamped_dispatches();
  REQUIRE(clamped.size() == 1);
  CHECK(clamped[0].command == "visit");
  CHECK(clamped[0].times == 2);
  CHECK(clamped[0].largest == 100000u);
  // A clone counts its own.
  Executable twin = exe.clone();
  CHECK(twin.clamped_dispatches().empty());
}

TEST_CASE("indirect.host_counts_are_64_bit_too_and_declared_access_orders" * doctest::timeout(60)) {
  const Device host = Device::host();
  HostBuffer<int> out(64);
  HostBuffer<std::uint64_t> count(1);
  CommandBuffer cmd("wide");
  cmd.fill(out, 0, 64);
  // No edge: the write writes `count`, the indirect command reads it, so the inferred hazard
  // orders them.
  cmd.write_value(count, std::uint64_t{33});
  cmd.parallel_for_indirect(count, 64, Mark{out.data()}).writes(out);
  Executable exe = compile(cmd, host, {.hazards = Hazards::infer});
  CHECK(exe.stats().edges_inferred == 2);  // fill -> indirect, write_value -> indirect
  Queue q(host);
  exe.launch(q).wait();
  for (int i = 0; i < 64; ++i) REQUIRE(out[i] == (i < 33 ? 1 : 0));
  CHECK(exe.clamped_dispatches().empty());
}

TEST_CASE("indirect.host_count_changes_every_pass_of_a_loop" * doctest::timeout(60)) {
  const Device host = Device::host();
  HostBuffer<int> out(16);
  HostBuffer<std::uint32_t> count(1);
  HostBuffer<int> passes(1);
  struct Grow {
    std::uint32_t* count;
    int* passes;
    void operator()(std::size_t) const {
      *count += 3;
      *passes += 1;
    }
  };
  struct More {
    const int* passes;
    bool operator()() const { return *passes < 4; }
  };
  CommandBuffer body("pass");
  auto grow = body.parallel_for(1, Grow{count.data(), passes.data()});
  body.parallel_for_indirect(count, 16, Mark{out.data()}).after(grow);
  CommandBuffer cmd("loop");
  cmd.loop_while(body, More{passes.data()});
  Executable exe = compile(cmd, host);
  for (int i = 0; i < 16; ++i) out[i] = 0;
  count[0] = 0;
  passes[0] = 0;
  Queue q(host);
  exe.launch(q).wait();
  // Passes ran 3, 6, 9 and 12 items: item i ran once per pass whose count passed it.
  for (int i = 0; i < 16; ++i) CHECK(out[i] == (i < 3 ? 4 : i < 6 ? 3 : i < 9 ? 2 : i < 12 ? 1 : 0));
}

TEST_CASE("indirect.refusals_name_the_command" * doctest::timeout(60)) {
  HostBuffer<std::uint32_t> count(1);
  HostBuffer<DispatchSize> grid(1);
  HostBuffer<int> out(4);
  CommandBuffer cmd("bad");
  auto e = CMDGRAPH_EXPECT_ERROR(cmd.parallel_for_indirect(count, 0, Mark{out.data()}),
                                 errc::invalid_argument);
  REQUIRE(e);
  CHECK(mentions(*e, "indirect#0"));
  CHECK(mentions(*e, "max_count"));
  e = CMDGRAPH_EXPECT_ERROR(
      cmd.parallel_for_indirect(View<std::uint32_t>{}, 4, Mark{out.data()}),
      errc::invalid_argument);
  REQUIRE(e);
  CHECK(mentions(*e, "count source"));
  auto misaligned = View<std::uint32_t>(
      reinterpret_cast<std::uint32_t*>(reinterpret_cast<char*>(out.data()) + 1), 1,
      MemorySpace::host, -1);
  e = CMDGRAPH_EXPECT_ERROR(cmd.parallel_for_indirect(misaligned, 4, Mark{out.data()}),
                            errc::invalid_argument);
  REQUIRE(e);
  CHECK(mentions(*e, "aligned"));
  e = CMDGRAPH_EXPECT_ERROR(
      cmd.launch_indirect(&not_a_kernel, grid, LaunchConfig{{0}, {32}}, out.data()),
      errc::invalid_argument);
  REQUIRE(e);
  CHECK(mentions(*e, "non-zero"));
  CHECK(cmd.size() == 0);  // nothing was recorded

  // The host backend runs no __global__ kernel, and says which command it is.
  cmd.launch_indirect(&not_a_kernel, grid, LaunchConfig{{4}, {32}}, out.data()).named("dispatch");
  e = CMDGRAPH_EXPECT_ERROR(compile(cmd, Device::host()), errc::unsupported);
  REQUIRE(e);
  CHECK(mentions(*e, "dispatch"));
  CHECK(mentions(*e, "CUDA device"));
}

TEST_CASE("indirect.host_source_in_device_memory_is_refused" * doctest::timeout(60)) {
  // Device memory the CPU cannot read: a placeholder address (nothing is dereferenced).
  const auto device_count =
      View<std::uint32_t>(reinterpret_cast<std::uint32_t*>(std::uintptr_t{4096}), 1,
                          MemorySpace::device, 0);
  HostBuffer<int> out(4);
  CommandBuffer cmd("far");
  cmd.parallel_for_indirect(device_count, 4, Mark{out.data()}).named("far_count");
  auto e = CMDGRAPH_EXPECT_ERROR(compile(cmd, Device::host()), errc::device_mismatch);
  REQUIRE(e);
  CHECK(mentions(*e, "far_count"));
}

TEST_CASE("indirect.host_runs_a_command_the_flag_written_before_it_enables" *
          doctest::timeout(60)) {
  const Device host = Device::host();
  HostBuffer<int> out(300);
  HostBuffer<std::uint32_t> flag(1);
  CommandBuffer cmd("maybe");
  auto zero = cmd.fill(out, 0, 300);
  auto decide = cmd.write_value(flag, 0u).named("decide");
  cmd.parallel_for_if(flag, 256, Mark{out.data()}).after(zero, decide).named("visit");
  Executable exe = compile(cmd, host);
  Queue q(host);
  for (std::uint32_t on : {0u, 1u, 0u, 7u}) {
    CAPTURE(on);
    exe.update(decide, flag, on);  // the flag comes from a command of the same launch
    exe.launch(q).wait();
    for (int i = 0; i < 300; ++i) REQUIRE(out[i] == (on != 0 && i < 256 ? 1 : 0));
  }
  CHECK(exe.clamped_dispatches().empty());  // a flag never clamps

  // Refusals name the command, and record nothing.
  CommandBuffer bad("bad");
  auto e = CMDGRAPH_EXPECT_ERROR(bad.parallel_for_if(flag, 0, Mark{out.data()}),
                                 errc::invalid_argument);
  REQUIRE(e);
  CHECK(mentions(*e, "zero-size range"));
  e = CMDGRAPH_EXPECT_ERROR(bad.parallel_for_if(View<std::uint32_t>{}, 4, Mark{out.data()}),
                            errc::invalid_argument);
  REQUIRE(e);
  CHECK(mentions(*e, "flag source"));
  e = CMDGRAPH_EXPECT_ERROR(
      bad.launch_if(&not_a_kernel, flag, LaunchConfig{{0}, {32}}, out.data()),
      errc::invalid_argument);
  REQUIRE(e);
  CHECK(mentions(*e, "non-zero"));
  CHECK(bad.size() == 0);
  // The host backend runs no __global__ kernel.
  bad.launch_if(&not_a_kernel, flag, LaunchConfig{{4}, {32}}, out.data()).named("switched");
  e = CMDGRAPH_EXPECT_ERROR(compile(bad, Device::host()), errc::unsupported);
  REQUIRE(e);
  CHECK(mentions(*e, "switched"));
  CHECK(mentions(*e, "CUDA device"));
}
