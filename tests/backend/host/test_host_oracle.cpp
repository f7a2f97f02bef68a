// Ordering oracle on the host backend: random DAGs of every shape, several launches each.
#include "support/ordering_oracle.hpp"
#include "support/random_dag.hpp"

#include <cmdgraph/cmdgraph.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>

using namespace cmdgraph;
using namespace cmdgraph::testing;

namespace {

// Records `dag` with vertex v as a host task (every 7th), a parallel_for of `elements[v]`
// tickets (every 5th: chunked across the pool), a parallel_for_indirect of 700 tickets, its
// count read from `counts` as it runs (every 22nd; every other one asks for 1,000 and is
// clamped to 700), a parallel_for_if of 700 tickets that its count (not 0) enables (every
// 22nd, 11 after them), or a one-element parallel_for.
std::vector<std::uint32_t> record_dag(CommandBuffer& cmd, const Dag& dag, Observations& obs,
                                      std::uint32_t launches, std::vector<std::uint32_t>& counts) {
  auto is_host_task = [](std::size_t v) { return v % 7 == 6; };
  auto is_indirect = [&](std::size_t v) { return v % 11 == 4 && !is_host_task(v); };
  auto is_flagged = [&](std::size_t v) { return is_indirect(v) && v % 22 == 15; };
  std::vector<std::uint32_t> elements(dag.size, 1);
  counts.assign(dag.size, 0);
  for (std::size_t v = 0; v < dag.size; ++v) {
    if ((v % 5 == 3 && !is_host_task(v)) || is_indirect(v)) elements[v] = 700;
    if (is_indirect(v)) counts[v] = v % 2 == 0 ? 700 : 1000;
  }
  std::uint32_t per_launch = 0;
  for (auto e : elements) per_launch += e;
  const TicketBoard board = obs.board(static_cast<std::uint32_t>(dag.size), per_launch, launches);
  std::vector<Command> commands;
  commands.reserve(dag.size);
  for (std::uint32_t v = 0; v < dag.size; ++v) {
    const Ticket ticket{board, v};
    if (is_host_task(v)) {
      commands.push_back(cmd.host([ticket] { ticket(0); }));
    } else if (is_flagged(v)) {
      commands.push_back(cmd.parallel_for_if(host_view(&counts[v], 1), 700, ticket));
    } else if (is_indirect(v)) {
      commands.push_back(cmd.parallel_for_indirect(host_view(&counts[v], 1), 700, ticket));
    } else {
      commands.push_back(cmd.parallel_for(elements[v], ticket));
    }
  }
  for (const auto& [p, c] : dag.edges) commands[c].after(commands[p]);
  return elements;
}

void run_oracle(DagShape shape, std::size_t n, std::uint32_t seed, std::uint32_t launches) {
  const Dag dag = random_dag(shape, n, seed);
  const std::string shape_name = to_string(shape);
  CAPTURE(shape_name);
  CAPTURE(dag.describe());
  CAPTURE(seed);
  Observations obs(dag.size * launches);
  CommandBuffer cmd("oracle");
  std::vector<std::uint32_t> counts;
  const auto elements = record_dag(cmd, dag, obs, launches, counts);
  Executable exe = compile(cmd, Device::host());
  Queue queue(Device::host());
  for (std::uint32_t k = 0; k < launches; ++k) exe.launch(queue);  // back to back, no waits
  queue.wait();
  const std::string verdict = check_order(dag, obs, launches, elements);
  CHECK_MESSAGE(verdict.empty(), verdict);
  // Each indirect command asking for 1,000 was clamped in every launch, and only those (a
  // flag asks for nothing: vertex v % 22 == 15).
  const auto clamped = exe.clamped_dispatches();
  std::size_t asking = 0;
  for (std::size_t v = 0; v < counts.size(); ++v) asking += counts[v] == 1000u && v % 22 != 15;
  CHECK(clamped.size() == asking);
  for (const ClampedDispatch& d : clamped) {
    CHECK(d.times == launches);
    CHECK(d.largest == 1000u);
  }
}

}  // namespace

TEST_CASE("host.oracle.random_dags" * doctest::timeout(300)) {
  // 200 DAGs: five shapes, sizes spread log-uniformly over 1..10,000 (both ends included).
  std::mt19937 rng(2026);
  std::uniform_real_distribution<double> exponent(0.0, 4.0);
  const DagShape shapes[] = {DagShape::chain, DagShape::fan, DagShape::layered, DagShape::random,
                             DagShape::shuffled};
  for (std::uint32_t i = 0; i < 200; ++i) {
    const DagShape shape = shapes[i % 5];
    std::size_t n = static_cast<std::size_t>(std::pow(10.0, exponent(rng)));
    if (i < 5) n = 1;
    if (i >= 195) n = 10000;
    run_oracle(shape, n, 1000 + i, 3);
  }
}

TEST_CASE("host.oracle.checker_catches_a_dropped_edge" * doctest::timeout(10)) {
  // The oracle itself must fail when an edge is not honoured: record a chain without its
  // edges, force the child first, and check against the DAG that has them.
  const Dag dag = random_dag(DagShape::chain, 2, 1);
  Observations obs(2);
  const TicketBoard board = obs.board(2, 2, 1);
  Ticket{board, 1}(0);
  Ticket{board, 0}(0);
  CHECK_FALSE(check_order(dag, obs, 1, {1, 1}).empty());
  Observations missed(2);
  Ticket{missed.board(2, 2, 1), 0}(0);
  CHECK_FALSE(check_order(dag, missed, 1, {1, 1}).empty());
}
