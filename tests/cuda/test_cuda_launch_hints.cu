// Programmatic edges and per-command priorities on both CUDA backends: a child launched while
// its parent still runs (and not through a full edge), the ordering oracle with every edge
// programmatic, and an urgent branch of one executable overtaking a normal one under load.
#include "cuda/kernels.cuh"
#include "cuda/oracle.cuh"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

using namespace cmdgraph;
using namespace cmdgraph::testing;

namespace {

struct Handoff {
  int finished;  // the parent's last write
  int value;     // what the parent hands over
};

// The parent lets its child launch at once, then works ~`cycles` before handing `value` over.
__global__ void early_trigger_parent(Handoff* h, long long cycles, int value) {
  cudaTriggerProgrammaticLaunchCompletion();
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
  h->value = value;
  __threadfence();
  *static_cast<volatile int*>(&h->finished) = 1;
}

// The child notes whether its parent was still running when it started, then waits for it and
// reads what it handed over: out = {overlapped, value seen}.
__global__ void waiting_child(Handoff* h, int* out) {
  const int overlapped = *static_cast<volatile int*>(&h->finished) == 0;
  cudaGridDependencySynchronize();
  out[0] = overlapped;
  out[1] = h->value;
}

// One launch's outcome of parent -> child through an edge of `kind`: {overlapped, value}.
std::vector<std::vector<int>> run_handoff(Backend backend, EdgeKind kind, bool lowered,
                                          std::size_t* programmatic_edges) {
  const Device gpu = Device::cuda(0);
  Buffer<Handoff> handoff(gpu, 1);
  Buffer<int> out(gpu, 2);
  CommandBuffer cmd("handoff");
  auto reset = cmd.fill(device_view(reinterpret_cast<int*>(handoff.data()), 2, gpu), 0, 2);
  auto poison = cmd.fill(out, -1, 2);
  auto parent = cmd.launch(&early_trigger_parent, LaunchConfig{{1}, {1}}, handoff.data(),
                           200'000LL, 42)
                    .named("parent")
                    .after(reset, poison);
  cmd.launch(&waiting_child, LaunchConfig{{1}, {1}}, handoff.data(), out.data())
      .named("child")
      .after(parent, kind);
  Executable exe = compile(cmd, gpu, {.backend = backend, .programmatic_edges = lowered});
  REQUIRE(exe.backend() == backend);
  *programmatic_edges = exe.stats().edges_programmatic;
  Queue q(gpu);
  HostBuffer<int> seen(2);
  CommandBuffer read("read");
  read.copy(seen, out, 2);
  Executable read_back = compile(read, gpu);
  std::vector<std::vector<int>> runs;
  for (int i = 0; i < 8; ++i) {
    seen[0] = seen[1] = -7;
    exe.launch(q);
    read_back.launch(q);
    q.wait();
    runs.push_back({seen[0], seen[1]});
  }
  return runs;
}

}  // namespace

TEST_CASE("cuda.programmatic.child_launches_while_its_parent_runs" * doctest::timeout(120)) {
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    std::size_t lowered = 0;
    for (const auto& run : run_handoff(backend, EdgeKind::programmatic, true, &lowered)) {
      CHECK(run == std::vector<int>{1, 42});  // overlapped, and still saw the handover
    }
    CHECK(lowered == 1);
    // The same recording through a full edge, or with programmatic edges switched off: the
    // child never starts before its parent has finished.
    for (const auto& run : run_handoff(backend, EdgeKind::full, true, &lowered)) {
      CHECK(run == std::vector<int>{0, 42});
    }
    CHECK(lowered == 0);
    for (const auto& run : run_handoff(backend, EdgeKind::programmatic, false, &lowered)) {
      CHECK(run == std::vector<int>{0, 42});
    }
    CHECK(lowered == 0);
  }
}

TEST_CASE("cuda.programmatic.oracle_with_every_edge_programmatic" * doctest::timeout(600)) {
  // Kernels that wait for their parents first keep every edge's order, whatever launches early.
  std::mt19937 rng(15);
  std::uniform_real_distribution<double> exponent(0.3, 3.5);
  const DagShape shapes[] = {DagShape::chain, DagShape::fan, DagShape::layered, DagShape::random,
                             DagShape::shuffled};
  std::size_t graph_programmatic = 0, streams_programmatic = 0;
  for (std::uint32_t i = 0; i < 40; ++i) {
    const DagShape shape = shapes[i % 5];
    const auto n = static_cast<std::size_t>(std::pow(10.0, exponent(rng)));
    const Dag dag = random_dag(shape, std::max<std::size_t>(n, 2), 15000 + i);
    const std::string shape_name = to_string(shape);
    CAPTURE(shape_name);
    CAPTURE(dag.describe());
    ExecutableStats stats;
    const std::string graph = run_on_gpu(dag, Backend::cuda_graph, 4, 3, nullptr, false,
                                         Device::cuda(0), false, EdgeKind::programmatic, &stats);
    CHECK_MESSAGE(graph.empty(), "cuda_graph: " << graph);
    // Every kept edge of the plan the shaped graph still holds (lane edges are full edges).
    CHECK(stats.edges_programmatic == stats.edges_reduced - stats.edges_shape_dropped);
    graph_programmatic += stats.edges_programmatic;
    const std::string streams = run_on_gpu(dag, Backend::streams, 1 + i % 4, 3, nullptr, false,
                                           Device::cuda(0), false, EdgeKind::programmatic,
                                           &stats);
    CHECK_MESSAGE(streams.empty(), "streams: " << streams);
    streams_programmatic += stats.edges_programmatic;
  }
  MESSAGE("programmatic edges lowered: " << graph_programmatic << " on graphs, "
                                         << streams_programmatic << " on streams");
  CHECK(streams_programmatic > 0);  // chains on one stream take them
}

namespace {

// Busy for `cycles` to 2 x `cycles`, by block, so the load's slots keep freeing.
__global__ void staggered_load(long long cycles) {
  const long long mine = cycles + cycles * (blockIdx.x % 8) / 8;
  const long long start = clock64();
  while (clock64() - start < mine) {
  }
}

// Holds its branch back until the load fills the GPU (one thread, ~`cycles`).
__global__ void hold(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

// A probe of many blocks; the last block to finish takes the next place in `finish_order`.
__global__ void probe(long long cycles, unsigned* done_blocks, unsigned* places, int slot) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    if (atomicAdd(&done_blocks[slot], 1u) == gridDim.x - 1) places[slot] = atomicAdd(&places[2], 1u);
  }
}

// Trials in which probe 0 finished before probe 1, out of `trials`, for one executable holding
// a low-priority load, and probes 0 and 1 after a short hold at priorities `first` and `second`.
int first_wins(Backend backend, Priority first, Priority second, int trials) {
  const Device gpu = Device::cuda(0);
  const unsigned sms = static_cast<unsigned>(gpu.properties().multiprocessors);
  Buffer<unsigned> counters(gpu, 5);  // done blocks of probes 0 and 1, then places 0, 1, next
  CommandBuffer cmd("mixed");
  auto clear = cmd.fill(counters, 0u, 5);
  cmd.launch(&staggered_load, LaunchConfig{{sms * 4096}, {128}}, 20'000LL)
      .named("load")
      .priority(Priority::low)
      .after(clear);
  auto wait = cmd.launch(&hold, LaunchConfig{{1}, {1}}, 4'000'000LL).named("hold").after(clear);
  const Priority priorities[] = {first, second};
  for (int slot = 0; slot < 2; ++slot) {
    // Four full waves each (16 blocks of 128 threads fit an SM): the urgent one should take
    // every freed slot until its last wave is placed.
    cmd.launch(&probe, LaunchConfig{{sms * 64}, {128}}, 50'000LL, counters.data(),
               counters.data() + 2, slot)
        .named(slot == 0 ? "probe0" : "probe1")
        .priority(priorities[slot])
        .after(wait);
  }
  Executable exe = compile(cmd, gpu, {.backend = backend, .max_streams = 4});
  REQUIRE(exe.stats().commands_prioritised == 3);
  Queue q(gpu);
  HostBuffer<unsigned> places(2);
  CommandBuffer read("read");
  read.copy(places, device_view(counters.data() + 2, 2, gpu), 2);
  Executable read_back = compile(read, gpu);
  int wins = 0;
  for (int t = 0; t < trials; ++t) {
    places[0] = places[1] = 99;
    exe.launch(q);
    read_back.launch(q);
    q.wait();
    REQUIRE((places[0] + places[1] == 1));  // both finished, one first
    wins += places[0] == 0;
  }
  return wins;
}

}  // namespace

TEST_CASE("cuda.priority.urgent_branch_overtakes_under_load" * doctest::timeout(300)) {
  // Inside one executable: a low-priority load fills the GPU; two probes become ready together.
  // The high-priority one must finish first in most trials, and lose when priorities swap.
  constexpr int trials = 16;
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    const int urgent_first = first_wins(backend, Priority::high, Priority::normal, trials);
    const int swapped = first_wins(backend, Priority::normal, Priority::high, trials);
    MESSAGE(std::string(to_string(backend)) << ": the high-priority probe 0 first in " << urgent_first
                               << " of " << trials << "; swapped, probe 0 first in " << swapped);
    CHECK(urgent_first >= trials * 3 / 4);
    CHECK(swapped <= trials / 4);
  }
}
