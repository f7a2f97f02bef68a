// The ordering oracle on both CUDA backends: random DAGs up to 10,000 commands, every command
// a kernel taking tickets with atomicAdd; and the same recordings on every backend give the
// same per-command run counts.
#include "backend/cuda_graph/shape_learning.hpp"
#include "cuda/oracle.cuh"
#include "support/expect_error.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

using namespace cmdgraph;
using namespace cmdgraph::testing;

TEST_CASE("cuda.oracle.random_dags_both_backends" * doctest::timeout(600)) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> exponent(0.0, 4.0);
  const DagShape shapes[] = {DagShape::chain, DagShape::fan, DagShape::layered, DagShape::random,
                             DagShape::shuffled};
  for (std::uint32_t i = 0; i < 120; ++i) {
    const DagShape shape = shapes[i % 5];
    std::size_t n = static_cast<std::size_t>(std::pow(10.0, exponent(rng)));
    if (i < 5) n = 1;
    if (i >= 115) n = 10000;
    const Dag dag = random_dag(shape, n, 5000 + i);
    const std::string shape_name = to_string(shape);
    CAPTURE(shape_name);
    CAPTURE(dag.describe());
    const std::string graph = run_on_gpu(dag, Backend::cuda_graph, 4, 3);
    CHECK_MESSAGE(graph.empty(), "cuda_graph: " << graph);
    const std::string streams = run_on_gpu(dag, Backend::streams, 1 + i % 8, 3);
    CHECK_MESSAGE(streams.empty(), "streams: " << streams);
  }
}

namespace {

// Random costs for `n` commands: nothing, a few microseconds, tens of them, or any.
std::vector<std::chrono::nanoseconds> random_costs(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::chrono::nanoseconds> costs(n);
  for (auto& c : costs) {
    const std::uint32_t pick = rng() % 4;
    c = std::chrono::nanoseconds(pick == 0 ? 0 : pick == 1 ? 2'000 : pick == 2 ? 20'000
                                                                             : rng() % 50'000);
  }
  return costs;
}

}  // namespace

// Shaped graphs (lane edges, CompileOptions::shape) keep every edge of the recording, on every
// lane count, counting units or costs; shaping random DAGs adds lane edges, so the oracle sees
// a graph that differs. The default, automatic, shapes only with every cost given.
TEST_CASE("cuda.oracle.shaped_graphs_keep_every_edge" * doctest::timeout(300)) {
  const DagShape shapes[] = {DagShape::random, DagShape::layered, DagShape::shuffled};
  struct Shaping {
    GraphShape shape;
    bool costs;
  };
  const Shaping shapings[] = {{GraphShape::automatic(), false}, {GraphShape::automatic(), true},
                              {GraphShape::uniform(), false},   {GraphShape::lanes(1), false},
                              {GraphShape::lanes(3), false},    {GraphShape::lanes(3), true},
                              {GraphShape::lanes(8), false}};
  std::size_t added = 0, by_cost = 0;
  for (std::uint32_t i = 0; i < 30; ++i) {
    const Dag dag = random_dag(shapes[i % 3], 10 + i * 60, 9000 + i);
    CAPTURE(dag.describe());
    const auto costs = random_costs(dag.size, 9000 + i);
    for (const Shaping& s : shapings) {
      ExecutableStats stats;
      const std::string wrong =
          run_on_gpu(dag, Backend::cuda_graph, 4, 2, nullptr, false, Device::cuda(0), false,
                     EdgeKind::full, &stats, s.shape,
                     s.costs ? std::span<const std::chrono::nanoseconds>(costs)
                             : std::span<const std::chrono::nanoseconds>());
      CHECK_MESSAGE(wrong.empty(), stats.shape_reason << ": " << wrong);
      added += stats.edges_shape_added;
      if (s.shape == GraphShape::lanes(3) && dag.size >= 100) CHECK(stats.shape_lanes == 3);
      if (s.shape == GraphShape::automatic() && !s.costs) {
        CHECK(stats.shape_lanes == 0);  // as unshaped as off()
        CHECK_MESSAGE(stats.shape_reason.find("have no cost") != std::string::npos,
                      stats.shape_reason);
      }
      if (s.shape == GraphShape::automatic() && s.costs) by_cost += stats.edges_shape_added;
    }
  }
  CHECK(added > 0);
  CHECK(by_cost > 0);
}

// An update in place keeps the graph's shape: costs that would shape it otherwise change no
// edge of the instantiated graph (CUDA updates none), and every edge still holds.
TEST_CASE("cuda.oracle.update_keeps_the_shape" * doctest::timeout(120)) {
  // Layered: these costs give 45 lanes, the others 33 (random DAGs of 300 start 61 sources
  // at once, and the lanes follow them whatever the costs).
  const Dag dag = random_dag(DagShape::layered, 300, 77);
  constexpr std::uint32_t launches = 2;
  DeviceBoard board(Device::cuda(0), dag.size * launches);
  auto board_for = [&](std::uint32_t per) {
    return board.board(static_cast<std::uint32_t>(dag.size), per, launches);
  };
  const auto costs = random_costs(dag.size, 1), others = random_costs(dag.size, 2);
  CommandBuffer cmd("oracle"), again("oracle");
  const Recorded r = record_dag(cmd, dag, board_for, false, {}, EdgeKind::full, costs);
  record_dag(again, dag, board_for, false, {}, EdgeKind::full, others);
  Executable exe = compile(cmd, Device::cuda(0));
  REQUIRE(exe.backend() == Backend::cuda_graph);
  const ExecutableStats shaped = exe.stats();
  CAPTURE(shaped.shape_reason);
  REQUIRE(shaped.shape_lanes > 0);
  // Shaped anew, the other costs give other lanes: the update in place must not take them.
  Executable fresh = compile(again, Device::cuda(0));
  CHECK(fresh.stats().shape_lanes != shaped.shape_lanes);
  const UpdateResult result = exe.update(again);  // throws update_refused if CUDA refused
  CHECK_FALSE(result.reinstantiated);
  CHECK(exe.stats().shape_reason == shaped.shape_reason);
  Queue q(Device::cuda(0));
  for (std::uint32_t k = 0; k < launches; ++k) exe.launch(q);
  q.wait();
  const std::string wrong = check_order(dag, board.read(), launches, r.elements);
  CHECK_MESSAGE(wrong.empty(), wrong);
}

namespace {

// Launches `exe` on `q`, waiting after each, until learning ended (shape_reason says what
// it learned) and `after` launches more ran, at most `cap`; returns the launches made.
std::uint32_t launch_until_learned(Executable& exe, Queue& q, std::uint32_t cap,
                                   std::uint32_t after,
                                   const std::function<void(std::uint32_t)>& each = {}) {
  std::uint32_t k = 0, ended = cap;
  for (; k < cap && k < ended + after; ++k) {
    if (each) each(k);
    exe.launch(q);
    q.wait();
    if (ended == cap && exe.stats().shape_reason.find("learning the shape") == std::string::npos) {
      ended = k;
    }
  }
  return k;
}

}  // namespace

// GraphShape::automatic() on commands without costs learns the shape: from launch 16 on,
// candidate shapings run in place of launches, each timed beside a launch of the plan's graph,
// and the winner takes over. Every launch (of the plan's graph, a candidate or the winner)
// keeps every edge, and the launches follow each other. Which wins depends on the card and
// the kernels; the second and third DAGs learn with margins so wide that the fewest lanes
// win, so that a takeover is seen on every card.
TEST_CASE("cuda.oracle.learned_shape_keeps_every_edge" * doctest::timeout(300)) {
  // Launches at most: the builds run beside launches the test waits for, which slow them.
  constexpr std::uint32_t cap = 3000;
  const detail::LearningPace before = detail::default_learning_pace();
  std::size_t learned = 0;
  for (std::uint32_t i = 0; i < 3; ++i) {
    detail::LearningPace& pace = detail::default_learning_pace();
    pace = before;
    if (i > 0) pace.within = pace.reject = 100;
    const Dag dag =
        random_dag(i == 1 ? DagShape::layered : DagShape::random, 300 + 200 * i, 9600 + i);
    CAPTURE(dag.describe());
    DeviceBoard board(Device::cuda(0), dag.size * cap);
    CommandBuffer cmd("learned");
    const Recorded r = record_dag(cmd, dag, [&](std::uint32_t per) {
      return board.board(static_cast<std::uint32_t>(dag.size), per, cap);
    }, true);
    Executable exe = compile(cmd, Device::cuda(0));
    REQUIRE(exe.backend() == Backend::cuda_graph);
    CHECK(exe.stats().shape_lanes == 0);
    CHECK_MESSAGE(exe.stats().shape_reason.find("automatic: learning the shape") == 0,
                  exe.stats().shape_reason);
    Queue q(Device::cuda(0));
    const std::uint32_t launches = launch_until_learned(exe, q, cap, 20);
    const ExecutableStats s = exe.stats();
    CAPTURE(s.shape_reason);
    CHECK(launches < cap);
    // Pairs: a candidate's launch and the plan graph's next.
    CHECK(s.shape_timed_launches >= 2);
    CHECK(s.shape_timed_launches % 2 == 0);
    const std::string timed = std::to_string(s.shape_timed_launches) + " timed launches";
    if (s.shape_lanes > 0) {
      ++learned;
      CHECK(s.shape_reason.find("automatic, learned from " + timed +
                                " (replay against the plan's graph: ") == 0);
      CHECK(s.edges_shape_added > 0);
      CHECK(s.shape_learned_at_launch >= 16 + 8);  // four pairs of the winner, from 16 on
      CHECK(s.shape_learned_at_launch + 20 <= launches);
    } else {
      CHECK(s.shape_reason.find("automatic: learned from " + timed) == 0);
    }
    const std::string wrong = check_order(dag, board.read(), launches, r.elements);
    CHECK_MESSAGE(wrong.empty(), wrong);
  }
  detail::default_learning_pace() = before;
  CHECK(learned >= 2);
}

namespace {

__global__ void sum_into(const int* in, int n, int* total) {
  int sum = 0;
  for (int i = 0; i < n; ++i) sum += in[i];
  *total = sum;
}

// A fork-join: zeros, 256 kernels each setting one cell, a kernel summing them (wide enough
// that lanes start it faster than the plan's graph does).
struct Fan {
  static constexpr int width = 256;
  CommandBuffer cmd{"fan"};
  std::vector<KernelCommand<int, int, int*>> sets;

  Fan(int* cells, int* total, const std::vector<int>& values) {
    const auto zero = cmd.launch(&set_kernel, LaunchConfig{{1}, {width}}, width, 0, cells);
    auto sum = cmd.launch(&sum_into, LaunchConfig{{1}, {1}}, cells, width, total);
    for (int i = 0; i < width; ++i) {
      sets.push_back(cmd.launch(&set_kernel, LaunchConfig{{1}, {1}}, 1, values[i], cells + i));
      sets.back().after(zero);
      sum.after(sets.back());
    }
  }
};

}  // namespace

// Values updated while the shape is learned reach the launch whichever instance runs it (the
// plan's graph, a candidate, the winner): by handle (each launch some), and by a re-recorded
// buffer taken in place (while learning, and after a winner took over). Outputs are poisoned
// before every launch.
TEST_CASE("cuda.oracle.learned_shape_takes_every_update" * doctest::timeout(300)) {
  const Device gpu = Device::cuda(0);
  Buffer<int> cells(gpu, Fan::width), total(gpu, 1);
  std::vector<int> values(Fan::width);
  for (int i = 0; i < Fan::width; ++i) values[i] = i;
  auto fan = std::make_unique<Fan>(cells.data(), total.data(), values);
  Executable exe = compile(fan->cmd, gpu);
  REQUIRE(exe.backend() == Backend::cuda_graph);
  Queue q(gpu);
  std::vector<int> seen(Fan::width);
  std::string wrong;
  std::uint32_t rerecorded = 0;
  auto step = [&](std::uint32_t k) {
    if (k > 0) {
      TEST_CUDA(cudaMemcpy(seen.data(), cells.data(), sizeof(int) * Fan::width,
                           cudaMemcpyDeviceToHost));
      int sum = 0, expected = 0;
      TEST_CUDA(cudaMemcpy(&sum, total.data(), sizeof(int), cudaMemcpyDeviceToHost));
      for (int v : values) expected += v;
      if (wrong.empty() && (seen != values || sum != expected)) {
        wrong = "launch " + std::to_string(k - 1) + " ran other values (sum " +
                std::to_string(sum) + ", expected " + std::to_string(expected) + ")";
      }
    }
    TEST_CUDA(cudaMemset(cells.data(), 0xff, sizeof(int) * Fan::width));
    TEST_CUDA(cudaMemset(total.data(), 0xff, sizeof(int)));
    TEST_CUDA(cudaDeviceSynchronize());
    if (k % 25 == 24) {  // a whole frame of new values, re-recorded
      for (int i = 0; i < Fan::width; ++i) values[i] = static_cast<int>(k) * 1000 + i;
      auto again = std::make_unique<Fan>(cells.data(), total.data(), values);
      CHECK_FALSE(exe.update(again->cmd).reinstantiated);
      fan = std::move(again);  // later updates by handle take its handles
      ++rerecorded;
      return;
    }
    for (int i = static_cast<int>(k % 8); i < Fan::width; i += 8) {
      values[i] = static_cast<int>(k) * 7 + i;
      exe.update(fan->sets[i], 1, values[i], cells.data() + i);
    }
  };
  const std::uint32_t launches = launch_until_learned(exe, q, 3000, 60, step);
  step(launches);  // checks the last launch
  const ExecutableStats s = exe.stats();
  CAPTURE(s.shape_reason);
  CHECK_MESSAGE(wrong.empty(), wrong);
  CHECK(s.shape_timed_launches >= 2);  // candidates ran, updated, in place of launches
  if (s.shape_lanes > 0) {  // a candidate won (else the plan's graph ran best)
    // Re-recorded frames came both while learning and after the learned graph took over.
    CHECK(rerecorded * 25 > s.shape_learned_at_launch + 25);
    CHECK(s.shape_learned_at_launch > 25);
  }
}

TEST_CASE("cuda.oracle.inferred_edges_both_backends" * doctest::timeout(300)) {
  // Issue 14's ticket oracle: no edge recorded, every edge of the DAG declared as access to
  // a device cell (read-after-write, write-after-read, write-after-write by turns) and inferred.
  std::mt19937 rng(14);
  std::uniform_real_distribution<double> exponent(0.0, 3.5);
  const DagShape shapes[] = {DagShape::chain, DagShape::fan, DagShape::layered, DagShape::random};
  for (std::uint32_t i = 0; i < 40; ++i) {
    const DagShape shape = shapes[i % 4];
    const auto n = static_cast<std::size_t>(std::pow(10.0, exponent(rng)));
    const Dag dag = random_dag(shape, std::max<std::size_t>(n, 2), 14000 + i);
    const std::string shape_name = to_string(shape);
    CAPTURE(shape_name);
    CAPTURE(dag.describe());
    const std::string graph = run_on_gpu(dag, Backend::cuda_graph, 4, 3, nullptr, false,
                                         Device::cuda(0), true);
    CHECK_MESSAGE(graph.empty(), "cuda_graph: " << graph);
    const std::string streams = run_on_gpu(dag, Backend::streams, 1 + i % 8, 3, nullptr, false,
                                           Device::cuda(0), true);
    CHECK_MESSAGE(streams.empty(), "streams: " << streams);
  }
}

TEST_CASE("cuda.oracle.same_counts_on_every_backend" * doctest::timeout(300)) {
  for (std::uint32_t i = 0; i < 20; ++i) {
    const Dag dag = random_dag(i % 2 ? DagShape::shuffled : DagShape::layered, 50 + 97 * i, 9000 + i);
    CAPTURE(dag.describe());
    Observations graph(0), streams(0);
    CHECK(run_on_gpu(dag, Backend::cuda_graph, 4, 2, &graph, true).empty());
    CHECK(run_on_gpu(dag, Backend::streams, 3, 2, &streams, true).empty());
    // The host backend runs the very same recording (host memory for its tickets).
    Observations host(dag.size * 2);
    CommandBuffer cmd("oracle");
    const Recorded r = record_dag(cmd, dag, [&](std::uint32_t per) {
      return host.board(static_cast<std::uint32_t>(dag.size), per, 2);
    }, true);
    Executable exe = compile(cmd, Device::host());
    Queue q(Device::host());
    exe.launch(q);
    exe.launch(q);
    q.wait();
    CHECK(check_order(dag, host, 2, r.elements).empty());
    CHECK(graph.runs == host.runs);
    CHECK(streams.runs == host.runs);
  }
}

namespace {
struct SetTo {
  float* at;
  float value;
  CMDGRAPH_HOST_DEVICE void operator()(std::size_t i) const { at[i] = value; }
};
}  // namespace

TEST_CASE("cuda.oracle.hazards_are_the_same_on_every_backend" * doctest::timeout(60)) {
  // The check is in the plan: the same recording gives the same error on every backend.
  const Device gpu = Device::cuda(0);
  Buffer<float> y(gpu, 4096);
  CommandBuffer cmd("example");
  cmd.parallel_for(4096, SetTo{y.data(), 1.0f}).named("scale").writes(y, "y");
  cmd.parallel_for(1024, SetTo{y.data() + 1024, 2.0f})
      .named("reduce")
      .reads(y.subview(1024, 1024), "y");
  std::vector<std::string> messages;  // one loop, not subcases: they compare across backends
  for (const Backend backend : cuda_backends) {
    const auto e = CMDGRAPH_EXPECT_ERROR(compile(cmd, gpu, {.backend = backend}), errc::hazard);
    REQUIRE(e);
    messages.push_back(e->what());
  }
  CHECK(messages[1] == messages[0]);
  CHECK(messages[0].find("command 'scale' writes y[0, 4096) while 'reduce' reads y[1024, 2048)") !=
        std::string::npos);
}
