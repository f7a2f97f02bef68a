// Indirect commands on a GPU, both CUDA backends: a grid or count written by a kernel of the
// same launch sizes the work with no host round trip (launch_indirect, parallel_for_indirect);
// zero runs nothing; a size beyond the limit is clamped and reported; indirect commands in a
// loop body and in an executed buffer; what CUDA's device-updatable nodes forbid (a whole-graph
// update) is refused with a reason, and rebuilds when allowed; clone and updates by handle.
#include "cuda/kernels.cuh"
#include "support/expect_error.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

using namespace cmdgraph;
using namespace cmdgraph::testing;

namespace {

// Writes the grid the next command runs: `x` blocks by 2 by 1, as read from *x.
__global__ void choose_grid(const int* x, DispatchSize* grid) {
  grid->x = static_cast<std::uint32_t>(*x);
  grid->y = 2;
  grid->z = 1;
}

// Counts the blocks that ran (thread 0 of each), and the largest x seen.
__global__ void count_blocks(int* blocks) {
  if (threadIdx.x == 0) atomicAdd(blocks, 1);
}

// Sets the count of the next parallel_for_indirect from *x.
__global__ void choose_count(const int* x, std::uint32_t* count) { *count = static_cast<std::uint32_t>(*x); }

struct Mark {
  int* out;
  __host__ __device__ void operator()(std::size_t i) const { out[i] += 1; }
};

// One pass of a loop: 3 more items, one more pass.
struct Grow {
  std::uint32_t* count;
  int* passes;
  __host__ __device__ void operator()(std::size_t) const {
    *count += 3;
    *passes += 1;
  }
};
struct More {
  const int* passes;
  __host__ __device__ bool operator()() const { return *passes < 4; }
};

std::vector<int> expected_marks(int ran, int size) {
  std::vector<int> v(size, 0);
  for (int i = 0; i < ran && i < size; ++i) v[i] = 1;
  return v;
}

}  // namespace

TEST_CASE("cuda.indirect.grid_written_by_a_kernel_of_the_same_launch" * doctest::timeout(120)) {
  const Device gpu = Device::cuda(0);
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    Buffer<int> x(gpu, 1), blocks(gpu, 1);
    Buffer<DispatchSize> grid(gpu, 1);
    CommandBuffer cmd("dispatch");
    auto zero = cmd.fill(blocks, 0, 1);
    auto size = cmd.launch(&choose_grid, LaunchConfig{{1}, {1}}, x.data(), grid.data());
    // Up to 100 x 4 blocks: x beyond 100 is clamped.
    cmd.launch_indirect(&count_blocks, grid, LaunchConfig{{100, 4}, {64}}, blocks.data())
        .after(zero, size)
        .named("work");
    Executable exe = compile(cmd, gpu, {.backend = backend});
    Queue q(gpu);
    for (int asked : {0, 1, 3, 100, 101, 5000, 7}) {
      CAPTURE(asked);
      write_ints(x, {asked});
      poison(blocks);
      exe.launch(q).wait();
      const int ran = asked < 100 ? asked : 100;
      CHECK(read_ints(blocks) == std::vector<int>{ran * 2});
    }
    const auto clamped = exe.clamped_dispatches();
    REQUIRE(clamped.size() == 1);
    CHECK(clamped[0].command == "work");
    CHECK(clamped[0].times == 2);
    CHECK(clamped[0].largest == 5000u * 2u);
  }
}

TEST_CASE("cuda.indirect.count_written_by_a_kernel_of_the_same_launch" * doctest::timeout(120)) {
  const Device gpu = Device::cuda(0);
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    constexpr int size = 200'000;
    constexpr std::uint32_t most = 150'000;
    Buffer<int> x(gpu, 1), out(gpu, size);
    Buffer<std::uint32_t> count(gpu, 1);
    CommandBuffer cmd("frontier");
    auto zero = cmd.fill(out, 0, size);
    auto chosen = cmd.launch(&choose_count, LaunchConfig{{1}, {1}}, x.data(), count.data());
    cmd.parallel_for_indirect(count, most, Mark{out.data()}).after(zero, chosen).named("visit");
    Executable exe = compile(cmd, gpu, {.backend = backend});
    Queue q(gpu);
    for (int asked : {0, 1, 300, 128'000, 150'001, 199'999, 5}) {
      CAPTURE(asked);
      write_ints(x, {asked});
      poison(out);
      exe.launch(q).wait();
      const int ran = asked < static_cast<int>(most) ? asked : static_cast<int>(most);
      REQUIRE(read_ints(out) == expected_marks(ran, size));
    }
    const auto clamped = exe.clamped_dispatches();
    REQUIRE(clamped.size() == 1);
    CHECK(clamped[0].times == 2);
    CHECK(clamped[0].largest == 199'999u);
  }
}

namespace {

// Mark padded to the oracle's ticket functor's 56 bytes, so that the count parameter the
// dispatcher sets lies further in.
struct WideMark {
  int* out;
  unsigned char pad[48];
  __host__ __device__ void operator()(std::size_t i) const { out[i] += 1; }
};

// What each of `commands` segments of `segment` items holds: "items at `launches`, items at 0,
// other values" per segment.
std::string segments(const std::vector<int>& v, int commands, int segment, int launches) {
  std::string s;
  for (int k = 0; k < commands; ++k) {
    int full = 0, zero = 0, other = 0;
    for (int i = 0; i < segment; ++i) {
      const int x = v[static_cast<std::size_t>(k * segment + i)];
      (x == launches ? full : x == 0 ? zero : other) += 1;
    }
    s += "[" + std::to_string(full) + " " + std::to_string(zero) + " " + std::to_string(other) +
         "]";
  }
  return s;
}

}  // namespace

namespace {

// Sets the flag the next commands read: `*x` odd enables them.
__global__ void choose_flag(const int* x, std::uint32_t* flag) { *flag = *x % 2; }

// Passes of a loop whose even passes enable the commands after.
struct Alternate {
  std::uint32_t* flag;
  int* passes;
  __host__ __device__ void operator()(std::size_t) const {
    *flag = *passes % 2 == 0;
    *passes += 1;
  }
};

}  // namespace

TEST_CASE("cuda.indirect.a_flag_written_on_the_device_enables_the_command" *
          doctest::timeout(120)) {
  const Device gpu = Device::cuda(0);
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    constexpr int size = 100'000;
    Buffer<int> x(gpu, 1), out(gpu, size), blocks(gpu, 1);
    Buffer<std::uint32_t> flag(gpu, 1);
    CommandBuffer cmd("maybe");
    auto zero = cmd.fill(out, 0, size);
    auto none = cmd.fill(blocks, 0, 1);
    auto chosen = cmd.launch(&choose_flag, LaunchConfig{{1}, {1}}, x.data(), flag.data());
    cmd.parallel_for_if(flag, 90'000, Mark{out.data()}).after(zero, chosen).named("visit");
    cmd.launch_if(&count_blocks, flag, LaunchConfig{{6, 2}, {64}}, blocks.data())
        .after(none, chosen)
        .named("count");
    Executable exe = compile(cmd, gpu, {.backend = backend});
    Queue q(gpu);
    for (int on : {1, 0, 0, 3, 2, 1}) {
      CAPTURE(on);
      write_ints(x, {on});
      poison(out);
      poison(blocks);
      exe.launch(q).wait();
      const bool enabled = on % 2 == 1;
      REQUIRE(read_ints(out) == expected_marks(enabled ? 90'000 : 0, size));
      CHECK(read_ints(blocks) == std::vector<int>{enabled ? 12 : 0});
    }
    CHECK(exe.clamped_dispatches().empty());

    // In a loop body, the flag changes every pass: passes 0 and 2 of 4 run the command.
    Buffer<int> passes(gpu, 1);
    CommandBuffer body("pass");
    auto decide = body.parallel_for(1, Alternate{flag.data(), passes.data()});
    body.parallel_for_if(flag, 1000, Mark{out.data()}).after(decide);
    CommandBuffer looped("looped");
    auto restart = looped.fill(passes, 0, 1);
    auto clean = looped.fill(out, 0, size);
    looped.loop_while(body, More{passes.data()}).after(restart, clean);
    Executable loop = compile(looped, gpu, {.backend = backend});
    for (int run = 0; run < 2; ++run) {
      poison(out);
      loop.launch(q).wait();
      std::vector<int> want(size, 0);
      for (int i = 0; i < 1000; ++i) want[i] = 2;
      REQUIRE(read_ints(out) == want);
    }
  }
}

TEST_CASE("cuda.indirect.several_commands_launched_back_to_back" * doctest::timeout(120)) {
  // Four indirect commands (as a chain or side by side) read 300 and 500 in turns, at most 300
  // each; launched three times before one wait or with a wait after each, with a small and a
  // wide functor: each command runs its first 300 items once a launch, whatever the others do.
  const Device gpu = Device::cuda(0);
  constexpr int segment = 512, most = 300, launches = 3;
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    for (int commands : {1, 4}) {
      for (bool chained : {true, false}) {
        for (bool wide : {false, true}) {
          for (bool waited : {false, true}) {
            CAPTURE(commands);
            CAPTURE(chained);
            CAPTURE(wide);
            CAPTURE(waited);
            Buffer<int> out(gpu, static_cast<std::size_t>(commands * segment));
            Buffer<std::uint32_t> counts(gpu, static_cast<std::size_t>(commands));
            std::vector<std::uint32_t> asked(static_cast<std::size_t>(commands));
            for (int k = 0; k < commands; ++k) {
              asked[static_cast<std::size_t>(k)] = k % 2 ? 500 : 300;
            }
            TEST_CUDA(cudaMemcpy(counts.data(), asked.data(), asked.size() * 4,
                                 cudaMemcpyHostToDevice));
            write_ints(out, std::vector<int>(out.size(), 0));
            CommandBuffer cmd("several");
            std::vector<Command> c;
            for (int k = 0; k < commands; ++k) {
              int* at = out.data() + k * segment;
              const auto count = counts.subview(static_cast<std::size_t>(k), 1);
              c.push_back(wide ? cmd.parallel_for_indirect(count, most, WideMark{at, {}})
                               : cmd.parallel_for_indirect(count, most, Mark{at}));
              if (chained && k > 0) c.back().after(c[static_cast<std::size_t>(k - 1)]);
            }
            Executable exe = compile(cmd, gpu, {.backend = backend});
            Queue q(gpu);
            for (int l = 0; l < launches; ++l) {
              exe.launch(q);
              if (waited) q.wait();
            }
            q.wait();
            const std::vector<int> got = read_ints(out);
            std::string want;
            for (int k = 0; k < commands; ++k) {
              want += "[" + std::to_string(most) + " " + std::to_string(segment - most) + " 0]";
            }
            CHECK(segments(got, commands, segment, launches) == want);
            CHECK(exe.clamped_dispatches().size() == static_cast<std::size_t>(commands / 2));
          }
        }
      }
    }
  }
}

TEST_CASE("cuda.indirect.in_a_loop_body_and_an_executed_buffer" * doctest::timeout(120)) {
  // Each pass of the loop grows the count by 3 and runs that many items: 4 passes run 3, 6, 9
  // and 12, as on the host backend. The same body executed as a secondary buffer, twice.
  const Device gpu = Device::cuda(0);
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    Buffer<int> out(gpu, 16), passes(gpu, 1);
    Buffer<std::uint32_t> count(gpu, 1);
    CommandBuffer body("pass");
    auto grow = body.parallel_for(1, Grow{count.data(), passes.data()});
    body.parallel_for_indirect(count, 16, Mark{out.data()}).after(grow);
    CommandBuffer cmd("loop");
    auto reset = cmd.fill(out, 0, 16);
    auto restart = cmd.fill(count, 0u, 1);
    auto from_zero = cmd.fill(passes, 0, 1);
    cmd.loop_while(body, More{passes.data()}).after(reset, restart, from_zero);
    Executable exe = compile(cmd, gpu, {.backend = backend});
    Queue q(gpu);
    for (int launch = 0; launch < 2; ++launch) {
      exe.launch(q).wait();
      std::vector<int> want(16);
      for (int i = 0; i < 16; ++i) want[i] = i < 3 ? 4 : i < 6 ? 3 : i < 9 ? 2 : i < 12 ? 1 : 0;
      CHECK(read_ints(out) == want);
    }

    CommandBuffer secondary("twice");
    auto again = secondary.parallel_for(1, Grow{count.data(), passes.data()});
    secondary.parallel_for_indirect(count, 16, Mark{out.data()}).after(again);
    CommandBuffer outer("outer");
    auto first_reset = outer.fill(out, 0, 16);
    auto first_count = outer.fill(count, 0u, 1);
    auto one = outer.execute(secondary).after(first_reset, first_count);
    outer.execute(secondary).after(one);
    Executable nested = compile(outer, gpu, {.backend = backend});
    nested.launch(q).wait();
    std::vector<int> want(16, 0);
    for (int i = 0; i < 6; ++i) want[i] = i < 3 ? 2 : 1;
    CHECK(read_ints(out) == want);
  }
}

TEST_CASE("cuda.indirect.updates_clones_and_what_cuda_forbids" * doctest::timeout(120)) {
  const Device gpu = Device::cuda(0);
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    Buffer<int> x(gpu, 1), out(gpu, 64), counter(gpu, 1);
    Buffer<std::uint32_t> count(gpu, 1);
    auto record = [&](CommandBuffer& cmd, std::uint32_t most) {
      auto zero = cmd.fill(out, 0, 64);
      auto chosen = cmd.launch(&choose_count, LaunchConfig{{1}, {1}}, x.data(), count.data());
      cmd.parallel_for_indirect(count, most, Mark{out.data()}).after(zero, chosen).named("visit");
      return cmd.launch(&increment, LaunchConfig{{1}, {1}}, counter.data());
    };
    CommandBuffer cmd("frame");
    auto bump = record(cmd, 64);
    Executable exe = compile(cmd, gpu, {.backend = backend});
    Queue q(gpu);
    write_ints(x, {10});
    write_ints(counter, {0});
    exe.launch(q).wait();
    CHECK(read_ints(out) == expected_marks(10, 64));

    // Another command's arguments by handle: per node, the indirect command untouched.
    Buffer<int> other(gpu, 1);
    write_ints(other, {0});
    exe.update(bump, other.data());
    exe.launch(q).wait();
    CHECK(read_ints(other) == std::vector<int>{1});
    CHECK(read_ints(out) == expected_marks(10, 64));

    // A clone sizes its own nodes.
    Executable twin = exe.clone();
    write_ints(x, {20});
    twin.launch(q).wait();
    CHECK(read_ints(out) == expected_marks(20, 64));

    // A re-recorded frame with another limit: the indirect command changed, so the update
    // takes the whole graph, which CUDA refuses for device-updatable nodes; with a rebuild
    // allowed it runs the new limit.
    CommandBuffer next("frame");
    record(next, 8);
    if (backend == Backend::cuda_graph) {
      auto e = CMDGRAPH_EXPECT_ERROR(exe.update(next), errc::update_refused);
      REQUIRE(e);
      CHECK(mentions(*e, "device-updatable"));
      exe.launch(q).wait();  // still the executable it was
      CHECK(read_ints(out) == expected_marks(20, 64));
    }
    const UpdateResult r = exe.update(next, {.reinstantiate_if_needed = true});
    CHECK(r.reinstantiated == (backend == Backend::cuda_graph));
    exe.launch(q).wait();
    CHECK(read_ints(out) == expected_marks(8, 64));
    const auto clamped = exe.clamped_dispatches();
    REQUIRE(clamped.size() == 1);
    CHECK(clamped[0].times == 1);
  }
}
