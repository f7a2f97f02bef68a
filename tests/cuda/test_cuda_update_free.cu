// Update-free kernels (KernelCommand::update_free) on a GPU, both CUDA backends: each launch
// runs with exactly the arguments updated before it (by handle or through an ArgumentWriter,
// in an update frame or not), while the host runs many launches ahead of the device and updates
// some kernels and not others; updates by a re-recorded buffer, a new launch configuration, a
// structure that changed, a clone, and a profiled executable (where the host sets the nodes)
// give the same results; a writer refuses what update() refuses.
#include "cuda/kernels.cuh"
#include "support/expect_error.hpp"

#include <doctest/doctest.h>

#include <future>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

using namespace cmdgraph;
using namespace cmdgraph::testing;

namespace {

// Holds the launch on the device for `ns` nanoseconds, so the host runs launches ahead.
__global__ void spin_for(long long ns) {
  long long start = 0, now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    __nanosleep(1000);
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}

// row[column] = value, once.
__global__ void put(int* row, int value, int column) {
  if (blockIdx.x == 0 && threadIdx.x == 0) row[column] = value;
}

// Counts the blocks that ran into out[column].
__global__ void count_blocks(int* out, int column) {
  if (threadIdx.x == 0) atomicAdd(out + column, 1);
}

using Put = KernelCommand<int*, int, int>;

// A spin, then `kernels` update-free puts after it, each writing column k of `rows`.
std::vector<Put> record_puts(CommandBuffer& cmd, int* rows, int kernels, int value) {
  auto spin = cmd.launch(&spin_for, LaunchConfig{{1}, {1}}, 200'000LL).named("spin");
  std::vector<Put> puts;
  for (int k = 0; k < kernels; ++k) {
    puts.push_back(cmd.launch(&put, LaunchConfig{{1}, {32}}, rows, value, k)
                       .after(spin)
                       .named("put" + std::to_string(k))
                       .update_free());
  }
  return puts;
}

}  // namespace

TEST_CASE("cuda.update_free.each_launch_takes_the_arguments_updated_before_it" *
          doctest::timeout(300)) {
  const Device gpu = Device::cuda(0);
  constexpr int kernels = 64, frames = 40;
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    Buffer<int> rows(gpu, frames * kernels);
    poison(rows);
    CommandBuffer cmd("frame");
    const std::vector<Put> puts = record_puts(cmd, rows.data(), kernels, -2);
    Executable exe = compile(cmd, gpu, {.backend = backend});
    CHECK(exe.stats().commands_update_free ==
          (backend == Backend::cuda_graph ? std::size_t{kernels} : 0));
    std::vector<ArgumentWriter<int*, int, int>> writers;
    for (const Put& p : puts) writers.push_back(exe.arguments(p));
    // The host's model of every kernel's arguments: the row it writes and the value.
    std::vector<std::pair<int, int>> now(kernels);
    std::vector<int> expected(frames * kernels, -1);
    Queue q(gpu);
    for (int f = 0; f < frames; ++f) {
      std::optional<UpdateFrame> held;  // every other frame's updates made in a frame
      if (f % 2 == 1) held = exe.update_frame();
      for (int k = 0; k < kernels; ++k) {
        // A third of the kernels keep the arguments of an earlier frame each time.
        if (f != 0 && (f + k) % 3 == 0) continue;
        now[k] = {f, f * 1000 + k};
        // Half by handle, half through writers, the halves changing every frame.
        if ((f + k) % 2 == 0) {
          exe.update(puts[k], rows.data() + f * kernels, f * 1000 + k, k);
        } else {
          writers[k].set(rows.data() + f * kernels, f * 1000 + k, k);
        }
      }
      for (int k = 0; k < kernels; ++k) expected[now[k].first * kernels + k] = now[k].second;
      held.reset();
      exe.launch(q);  // no wait: the spin keeps the device behind the host
    }
    q.wait();
    CHECK(read_ints(rows) == expected);
  }
}

TEST_CASE("cuda.update_free.rerecorded_frames_configs_and_structures" * doctest::timeout(300)) {
  const Device gpu = Device::cuda(0);
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    Buffer<int> out(gpu, 8);
    // Two update-free kernels: a put and a block counter.
    auto record = [&](CommandBuffer& cmd, int value, unsigned blocks, bool extra) {
      auto p = cmd.launch(&put, LaunchConfig{{1}, {32}}, out.data(), value, 0)
                   .named("put")
                   .update_free();
      auto c = cmd.launch(&count_blocks, LaunchConfig{{blocks}, {32}}, out.data(), 1)
                   .named("count")
                   .update_free()
                   .after(p);
      if (extra) cmd.launch(&put, LaunchConfig{{1}, {32}}, out.data(), value + 1, 2).after(c);
      return std::pair{p, c};
    };
    CommandBuffer first("frame");
    record(first, 7, 3, false);
    Executable exe = compile(first, gpu, {.backend = backend});
    Queue q(gpu);
    auto run = [&] {
      write_ints(out, {-1, 0, -1, -1, -1, -1, -1, -1});
      exe.launch(q).wait();
      return read_ints(out);
    };
    CHECK(run() == std::vector<int>{7, 3, -1, -1, -1, -1, -1, -1});
    // A re-recorded frame with new values only: updated in place, on the device where it can.
    CommandBuffer second("frame");
    record(second, 11, 3, false);
    const UpdateResult values = exe.update(second);
    CHECK_FALSE(values.reinstantiated);
    CHECK(run() == std::vector<int>{11, 3, -1, -1, -1, -1, -1, -1});
    // A new launch configuration of an update-free kernel, by its handle: set from the host.
    CommandBuffer third("frame");
    const auto [p3, c3] = record(third, 12, 3, false);
    exe.update(third);
    exe.update(c3, LaunchConfig{{5}, {32}});
    exe.update(p3, out.data(), 13, 0);
    CHECK(run() == std::vector<int>{13, 5, -1, -1, -1, -1, -1, -1});
    // Another structure: rebuilt when allowed, refused (nothing changed) when not.
    CommandBuffer fourth("frame");
    record(fourth, 20, 2, true);
    CMDGRAPH_EXPECT_ERROR(exe.update(fourth), errc::update_refused);
    CHECK(run() == std::vector<int>{13, 5, -1, -1, -1, -1, -1, -1});
    CommandBuffer fifth("frame");
    const Put p5 = record(fifth, 20, 2, true).first;
    CHECK(exe.update(fifth, {.reinstantiate_if_needed = true}).reinstantiated);
    CHECK(run() == std::vector<int>{20, 2, 21, -1, -1, -1, -1, -1});
    exe.update(p5, out.data(), 30, 0);
    CHECK(run() == std::vector<int>{30, 2, 21, -1, -1, -1, -1, -1});
    // A writer names its command as a handle does: the buffer the executable took last.
    auto stale = CMDGRAPH_EXPECT_ERROR(exe.arguments(p3), errc::foreign_handle);
    const ArgumentWriter<int*, int, int> writer = exe.arguments(p5);
    writer.set(out.data(), 31, 0);
    CHECK(run() == std::vector<int>{31, 2, 21, -1, -1, -1, -1, -1});
    auto misfit = CMDGRAPH_EXPECT_ERROR(writer.set(out.data(), 5'000'000'000LL, 0),
                                        errc::invalid_argument);
    REQUIRE(misfit);
    CHECK(misfit->commands() == std::vector<std::string>{"put"});
    CHECK(run() == std::vector<int>{31, 2, 21, -1, -1, -1, -1, -1});  // nothing changed
    CommandBuffer sixth("frame");
    record(sixth, 20, 2, true);
    exe.update(sixth);
    auto foreign = CMDGRAPH_EXPECT_ERROR(writer.set(out.data(), 32, 0), errc::foreign_handle);
    REQUIRE(foreign);
    CHECK(exe.stats().commands_update_free == (backend == Backend::cuda_graph ? 2u : 0u));
  }
}

TEST_CASE("cuda.update_free.clones_and_profiled_executables" * doctest::timeout(300)) {
  const Device gpu = Device::cuda(0);
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    constexpr int kernels = 8;
    Buffer<int> a(gpu, kernels), b(gpu, kernels);
    poison(a);
    poison(b);
    CommandBuffer cmd("frame");
    const std::vector<Put> puts = record_puts(cmd, a.data(), kernels, 1);
    Executable exe = compile(cmd, gpu, {.backend = backend});
    Executable twin = exe.clone();
    Executable profiled = compile(cmd, gpu, {.backend = backend, .profile = true});
    CHECK(profiled.stats().commands_update_free == 0);  // the host sets its nodes
    Queue q(gpu);
    for (int k = 0; k < kernels; ++k) {
      exe.update(puts[k], a.data(), 100 + k, k);
      twin.update(puts[k], b.data(), 200 + k, k);
    }
    exe.launch(q);
    twin.launch(q);
    q.wait();
    std::vector<int> want_a(kernels), want_b(kernels);
    for (int k = 0; k < kernels; ++k) {
      want_a[k] = 100 + k;
      want_b[k] = 200 + k;
    }
    CHECK(read_ints(a) == want_a);
    CHECK(read_ints(b) == want_b);
    for (int k = 0; k < kernels; ++k) profiled.update(puts[k], b.data(), 300 + k, k);
    profiled.launch(q).wait();
    for (int& v : want_b) v += 100;
    CHECK(read_ints(b) == want_b);
    exe.launch(q).wait();  // the original's arguments stayed its own
    CHECK(read_ints(a) == want_a);
    // A writer outliving its executable is refused, not used.
    std::optional<ArgumentWriter<int*, int, int>> orphan;
    {
      Executable gone = exe.clone();
      orphan = gone.arguments(puts[0]);
      orphan->set(a.data(), 7, 0);
    }
    auto dead = CMDGRAPH_EXPECT_ERROR(orphan->set(a.data(), 8, 0), errc::invalid_handle);
    REQUIRE(dead);
  }
}

TEST_CASE("cuda.update_free.frames_that_mix_updates_and_rebuild" * doctest::timeout(300)) {
  // Writes in an update frame go straight to the update-free kernels' values until another
  // update in the frame, which may replace them: an update by handle, a re-recorded buffer of
  // another structure (a rebuild). Each launch after the frame runs what the frame wrote last.
  const Device gpu = Device::cuda(0);
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    constexpr int kernels = 8;
    Buffer<int> row(gpu, kernels + 1);
    poison(row);
    CommandBuffer cmd("frame");
    const std::vector<Put> puts = record_puts(cmd, row.data(), kernels, -2);
    Executable exe = compile(cmd, gpu, {.backend = backend});
    std::vector<ArgumentWriter<int*, int, int>> writers;
    for (const Put& p : puts) writers.push_back(exe.arguments(p));
    Queue q(gpu);
    std::vector<int> want(kernels + 1, -1);
    {
      UpdateFrame held = exe.update_frame();
      for (int k = 0; k < kernels; ++k) writers[k].set(row.data(), 100 + k, k);
      exe.update(puts[0], row.data(), 200, 0);  // by handle, between writes
      for (int k = 1; k < kernels; ++k) writers[k].set(row.data(), 300 + k, k);
    }
    exe.launch(q).wait();
    want[0] = 200;
    for (int k = 1; k < kernels; ++k) want[k] = 300 + k;
    CHECK(read_ints(row) == want);
    {
      UpdateFrame held = exe.update_frame();
      writers[0].set(row.data(), 400, 0);
      CommandBuffer wider("frame");
      const std::vector<Put> more = record_puts(wider, row.data(), kernels + 1, -3);
      CHECK(exe.update(wider, {.reinstantiate_if_needed = true}).reinstantiated);
      CMDGRAPH_EXPECT_ERROR(writers[1].set(row.data(), 500, 1), errc::foreign_handle);
      for (int k = 0; k <= kernels; ++k) exe.arguments(more[k]).set(row.data(), 600 + k, k);
    }
    exe.launch(q).wait();
    for (int k = 0; k <= kernels; ++k) want[k] = 600 + k;
    CHECK(read_ints(row) == want);
    CHECK(exe.stats().commands_update_free ==
          (backend == Backend::cuda_graph ? std::size_t{kernels + 1} : 0));
  }
}

TEST_CASE("cuda.update_free.writers_that_write_by_themselves_stay_checked" *
          doctest::timeout(300)) {
  // A writer that wrote in a frame writes its next values there by itself, with no call into
  // the library, until they move: across frames and launches its values still reach the
  // device, and it still sees transient memory born in the frame, another thread's frame, and
  // a re-recorded buffer that replaces its command.
  const Device gpu = Device::cuda(0);
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    Buffer<int> row(gpu, 2);
    poison(row);
    CommandBuffer cmd("frame");
    const std::vector<Put> puts = record_puts(cmd, row.data(), 2, -2);
    Executable exe = compile(cmd, gpu, {.backend = backend});
    ArgumentWriter<int*, int, int> first = exe.arguments(puts[0]);
    const ArgumentWriter<int*, int, int> second = exe.arguments(puts[1]);
    Queue q(gpu);
    for (int f = 1; f <= 3; ++f) {
      {
        UpdateFrame held = exe.update_frame();
        first.set(row.data(), 10 * f, 0);
        first.set(row.data(), 10 * f + 1, 0);
        second.set(row.data(), 10 * f + 2, 1);
      }
      exe.launch(q).wait();
      CHECK(read_ints(row) == std::vector<int>{10 * f + 1, 10 * f + 2});
    }
    {
      UpdateFrame held = exe.update_frame();
      first.set(row.data(), 40, 0);
      first.set(row.data(), 41, 0);
      {
        CommandBuffer other("other");
        const Transient<int> t = other.alloc<int>(4);
        const auto e = CMDGRAPH_EXPECT_ERROR(first.set(t.data(), 42, 0), errc::foreign_handle);
        REQUIRE(e);
        const std::string what = e->what();  // "... (at 0x...) this executable does not ..."
        CHECK(what.find("update of command 'put0': a new value reaches transient memory") !=
              std::string::npos);
        CHECK(what.find("this executable does not allocate") != std::string::npos);
      }
      first.set(row.data(), 43, 0);
    }
    exe.launch(q).wait();
    CHECK(read_ints(row) == std::vector<int>{43, 32});
    {
      // This thread's writer, taught in its own frame, tried while another thread holds one.
      { UpdateFrame held = exe.update_frame(); first.set(row.data(), 50, 0); }
      std::promise<void> opened, tried;
      std::thread other([&] {
        UpdateFrame held = exe.update_frame();
        ArgumentWriter<int*, int, int> mine = first;  // taught in the first thread's frame
        mine.set(row.data(), 51, 0);
        mine.set(row.data(), 52, 0);
        opened.set_value();
        tried.get_future().wait();
      });
      opened.get_future().wait();
      const auto e = CMDGRAPH_EXPECT_ERROR(first.set(row.data(), 53, 0), errc::concurrent_use);
      tried.set_value();
      other.join();
      REQUIRE(e);
      CHECK(std::string(e->what()).find("holds an update frame") != std::string::npos);
    }
    exe.launch(q).wait();
    CHECK(read_ints(row) == std::vector<int>{52, 32});
    {
      // Updates by handle, between frames and inside one, leave the writers' slots open; the
      // values copied (a clone held them) close them, also when a copy lies where a freed one
      // lay (the clones below leave their copies for the next to take their place).
      {
        UpdateFrame held = exe.update_frame();
        first.set(row.data(), 70, 0);
        second.set(row.data(), 71, 1);
      }
      for (int round = 0; round < 4; ++round) {
        const Executable twin = exe.clone();
        exe.update(puts[0], row.data(), 72 + round, 0);  // copies what the twin holds
      }
      {
        UpdateFrame held = exe.update_frame();
        first.set(row.data(), 80, 0);
        second.set(row.data(), 81, 1);  // taught before the copies: learns where they are
        exe.update(puts[0], row.data(), 82, 0);
        first.set(row.data(), 83, 0);
        second.set(row.data(), 84, 1);
      }
      exe.launch(q).wait();
      CHECK(read_ints(row) == std::vector<int>{83, 84});
      Executable twin = exe.clone();
      {
        UpdateFrame held = exe.update_frame();
        first.set(row.data(), 90, 0);
        second.set(row.data(), 91, 1);
      }
      exe.launch(q).wait();
      CHECK(read_ints(row) == std::vector<int>{90, 91});
      twin.launch(q).wait();
      CHECK(read_ints(row) == std::vector<int>{83, 84});
    }
    {
      UpdateFrame held = exe.update_frame();
      first.set(row.data(), 60, 0);
      first.set(row.data(), 61, 0);
      CommandBuffer again("frame");
      record_puts(again, row.data(), 2, -3);
      CHECK_FALSE(exe.update(again).reinstantiated);
      CMDGRAPH_EXPECT_ERROR(first.set(row.data(), 62, 0), errc::foreign_handle);
    }
    exe.launch(q).wait();
    CHECK(read_ints(row) == std::vector<int>{-3, -3});
  }
}
