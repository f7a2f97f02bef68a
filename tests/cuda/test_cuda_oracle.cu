// The ordering oracle on both CUDA backends: random DAGs up to 10,000 commands, every command
// a kernel taking tickets with atomicAdd; and the same recordings on every backend give the
// same per-command run counts.
#include "cuda/kernels.cuh"
#include "support/random_dag.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <random>

using namespace cmdgraph;
using namespace cmdgraph::testing;

namespace {

struct Recorded {
  std::vector<std::uint32_t> elements;
};

// Vertex v is a raw kernel launch (every 4th, unless `portable`), a 300-element parallel_for
// (every 3rd) or a one-element parallel_for.
Recorded record_dag(CommandBuffer& cmd, const Dag& dag, const std::function<TicketBoard(std::uint32_t)>& board_for,
                    bool portable) {
  Recorded r;
  r.elements.assign(dag.size, 1);
  auto is_kernel = [&](std::size_t v) { return !portable && v % 4 == 1; };
  for (std::size_t v = 0; v < dag.size; ++v) {
    if (v % 3 == 2 && !is_kernel(v)) r.elements[v] = 300;
  }
  std::uint32_t per_launch = 0;
  for (auto e : r.elements) per_launch += e;
  const TicketBoard board = board_for(per_launch);
  std::vector<Command> c;
  c.reserve(dag.size);
  for (std::uint32_t v = 0; v < dag.size; ++v) {
    const Ticket t{board, v};
    if (is_kernel(v)) {
      c.push_back(cmd.launch(&ticket_kernel, LaunchConfig{{1}, {1}}, t));
    } else {
      c.push_back(cmd.parallel_for(r.elements[v], t));
    }
  }
  for (const auto& [p, k] : dag.edges) c[k].after(c[p]);
  return r;
}

std::string run_on_gpu(const Dag& dag, Backend backend, unsigned max_streams, std::uint32_t launches,
                       Observations* out = nullptr, bool portable = false) {
  const Device gpu = Device::cuda(0);
  DeviceBoard board(gpu, dag.size * launches);
  CommandBuffer cmd("oracle");
  const Recorded r = record_dag(cmd, dag, [&](std::uint32_t per) {
    return board.board(static_cast<std::uint32_t>(dag.size), per, launches);
  }, portable);
  Executable exe = compile(cmd, gpu, {.backend = backend, .max_streams = max_streams});
  REQUIRE(exe.backend() == backend);
  Queue q(gpu);
  for (std::uint32_t k = 0; k < launches; ++k) exe.launch(q);
  q.wait();
  Observations obs = board.read();
  if (out) *out = obs;
  return check_order(dag, obs, launches, r.elements);
}

}  // namespace

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
