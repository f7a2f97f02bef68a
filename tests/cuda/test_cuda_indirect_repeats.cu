// Indirect commands whose sizes repeat, both CUDA backends. A dispatcher sets on its node only
// what differs from what it set last (lib/cuda/dispatch.cu): these sizes repeat, fall to zero
// and come back, pass after pass of a loop and launch after launch, and each run must still do
// exactly what its own size says; two nodes of one command (a body executed twice) are sized
// each by itself. And a dispatcher reads what the kernels before it wrote, even a kernel that
// lets what follows it launch early (a programmatic launch's trigger).
#include "cuda/kernels.cuh"

#include <doctest/doctest.h>

#include <cstdint>
#include <iterator>
#include <vector>

using namespace cmdgraph;
using namespace cmdgraph::testing;

namespace {

// Sizes that repeat, vanish and come back, with counts of one block and of two (256 a block),
// and grids of the same blocks after a change of items.
constexpr std::uint32_t sizes[] = {5, 5, 0, 0, 5, 7, 7, 300, 257, 257, 0, 7, 1, 1};
constexpr int passes_run = static_cast<int>(std::size(sizes));
constexpr std::uint32_t most = 512;

// The pass's size, for each form: items, a grid of that many blocks, a flag (odd sizes).
struct Choose {
  const std::uint32_t* table;
  int* passes;
  std::uint32_t* count;
  DispatchSize* grid;
  std::uint32_t* flag;
  __host__ __device__ void operator()(std::size_t) const {
    const std::uint32_t n = table[*passes];
    *count = n;
    *grid = DispatchSize{n, 1, 1};
    *flag = n % 2;
    *passes += 1;
  }
};
struct Mark {
  int* out;
  __host__ __device__ void operator()(std::size_t i) const { out[i] += 1; }
};
__global__ void mark_block(int* hits) {
  if (threadIdx.x == 0) hits[blockIdx.x] += 1;
}
// Chooses as Choose does, late: it lets the commands after it launch at once (a programmatic
// launch's trigger), then spins ~50 us before it writes.
__global__ void choose_late(Choose choose) {
  cudaTriggerProgrammaticLaunchCompletion();
  for (const long long start = clock64(); clock64() - start < 100000;) {
  }
  choose(0);
}
struct Left {
  const int* passes;
  __host__ __device__ bool operator()() const { return *passes < passes_run; }
};

// What `runs` runs of the sizes leave: items[i] counts the runs of more than i items, or of
// more than i blocks; `flagged` the runs of an odd size.
struct Expected {
  std::vector<int> items = std::vector<int>(most, 0);
  int flagged = 0;
  void add(std::uint32_t n) {
    for (std::uint32_t i = 0; i < n && i < most; ++i) items[i] += 1;
    flagged += static_cast<int>(n % 2);
  }
};

struct Memory {
  Buffer<std::uint32_t> table, count, flag;
  Buffer<DispatchSize> grid;
  Buffer<int> passes, items, blocks, flagged;
  explicit Memory(Device gpu)
      : table(gpu, passes_run), count(gpu, 1), flag(gpu, 1), grid(gpu, 1), passes(gpu, 1),
        items(gpu, most), blocks(gpu, most), flagged(gpu, 1) {
    TEST_CUDA(cudaMemcpy(table.data(), sizes, sizeof sizes, cudaMemcpyHostToDevice));
  }
  Choose choose() { return {table.data(), passes.data(), count.data(), grid.data(), flag.data()}; }
  // One pass: choose this pass's size, then the three forms, each sized by it.
  void record_pass(CommandBuffer& cmd) { record_forms(cmd, cmd.parallel_for(1, choose())); }
  void record_forms(CommandBuffer& cmd, Command chosen) {
    cmd.parallel_for_indirect(count, most, Mark{items.data()}).after(chosen).named("items");
    cmd.launch_indirect(&mark_block, grid, LaunchConfig{{most}, {32}}, blocks.data())
        .after(chosen)
        .named("blocks");
    cmd.launch_if(&increment, flag, LaunchConfig{{1}, {1}}, flagged.data())
        .after(chosen)
        .named("flagged");
  }
  void clear() {
    write_ints(items, std::vector<int>(most, 0));
    write_ints(blocks, std::vector<int>(most, 0));
    write_ints(flagged, {0});
    write_ints(passes, {0});
  }
  void check(const Expected& want) {
    CHECK(read_ints(items) == want.items);
    CHECK(read_ints(blocks) == want.items);
    CHECK(read_ints(flagged) == std::vector<int>{want.flagged});
  }
};

}  // namespace

TEST_CASE("cuda.indirect_repeats.pass_after_pass_of_a_loop" * doctest::timeout(120)) {
  const Device gpu = Device::cuda(0);
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    Memory m(gpu);
    CommandBuffer body("pass");
    m.record_pass(body);
    CommandBuffer cmd("passes");
    cmd.loop_while(body, Left{m.passes.data()});
    Executable exe = compile(cmd, gpu, {.backend = backend});
    Queue q(gpu);
    // Again: the second launch's first pass follows what the first launch's last pass set.
    for (int launch = 0; launch < 2; ++launch) {
      CAPTURE(launch);
      m.clear();
      exe.launch(q).wait();
      Expected want;
      for (std::uint32_t n : sizes) want.add(n);
      m.check(want);
    }
    CHECK(exe.clamped_dispatches().empty());
  }
}

TEST_CASE("cuda.indirect_repeats.launch_after_launch" * doctest::timeout(120)) {
  // Each launch chooses its size anew, the sizes poisoned (0) before it: chosen by a
  // parallel_for, or by a kernel that lets what follows it launch before it writes them, and
  // each dispatcher must read them written. (Tried, stop 63: dispatchers launched
  // programmatically after kernels, waiting for them in the kernel; bench_indirect showed them
  // 0.07 us a command slower. With no wait, the late chooser failed here.)
  const Device gpu = Device::cuda(0);
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    for (const bool late : {false, true}) {
      CAPTURE(late);
      Memory m(gpu);
      CommandBuffer cmd("one pass");
      if (late) {
        m.record_forms(cmd, cmd.launch(&choose_late, LaunchConfig{{1}, {1}}, m.choose()));
      } else {
        m.record_pass(cmd);
      }
      Executable exe = compile(cmd, gpu, {.backend = backend});
      Queue q(gpu);
      m.clear();
      Expected want;
      for (std::uint32_t n : sizes) {
        CAPTURE(n);
        TEST_CUDA(cudaMemset(m.count.data(), 0, sizeof(std::uint32_t)));
        TEST_CUDA(cudaMemset(m.grid.data(), 0, sizeof(DispatchSize)));
        TEST_CUDA(cudaMemset(m.flag.data(), 0, sizeof(std::uint32_t)));
        TEST_CUDA(cudaDeviceSynchronize());
        exe.launch(q).wait();
        want.add(n);
        m.check(want);
      }
    }
  }
}

TEST_CASE("cuda.indirect_repeats.a_body_executed_twice_sizes_both_nodes" *
          doctest::timeout(120)) {
  // The same pass twice in one launch, each time with the same size: the second execution's
  // nodes were never sized before, whatever the first one's were.
  const Device gpu = Device::cuda(0);
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    Memory m(gpu);
    CommandBuffer pass("pass");
    m.record_pass(pass);
    CommandBuffer cmd("twice");
    auto first = cmd.execute(pass);
    auto rewind = cmd.fill(m.passes, 0, 1).after(first);
    cmd.execute(pass).after(rewind);
    Executable exe = compile(cmd, gpu, {.backend = backend});
    Queue q(gpu);
    m.clear();
    Expected want;
    for (std::uint32_t n : {5u, 5u}) want.add(n);
    exe.launch(q).wait();
    m.check(want);
  }
}
