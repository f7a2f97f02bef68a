// The ordering oracle with conditional commands: a DAG whose vertices take their tickets inside
// the bodies of if_else, switch_on and loop_while commands (a loop's body a switch), so every
// body run must take its tickets after its command's parents and before its children. The
// branches follow the live ticket count, which no host decided. Host and GPU suites record the
// same DAGs.
#pragma once

#include "support/ordering_oracle.hpp"
#include "support/random_dag.hpp"

#include <cmdgraph/cmdgraph.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace cmdgraph::testing {

/// The ticket counter's value now: a load that other tickets race with (atomic on the host).
CMDGRAPH_TEST_HD inline std::uint32_t live_count(std::uint32_t* counter) {
#if defined(__CUDA_ARCH__)
  return *static_cast<volatile std::uint32_t*>(counter);
#else
  return std::atomic_ref<std::uint32_t>(*counter).load();
#endif
}

/// True when the tickets taken so far are even.
struct TicketsEven {
  std::uint32_t* counter;
  CMDGRAPH_TEST_HD bool operator()() const { return live_count(counter) % 2 == 0; }
};

/// The tickets taken so far modulo `cases`: always a case.
struct TicketsModulo {
  std::uint32_t* counter;
  std::uint32_t cases;
  CMDGRAPH_TEST_HD int operator()() const {
    return static_cast<int>(live_count(counter) % cases);
  }
};

/// Holds for `passes` checks, then fails once, then again: `passes` passes every launch (one
/// loop's launches never overlap, so its own cell needs no atomics).
struct PassesEachLaunch {
  std::uint32_t* checks;
  std::uint32_t passes;
  CMDGRAPH_TEST_HD bool operator()() const { return (*checks)++ % (passes + 1) < passes; }
};

/// Records `dag` into `cmd`: vertex v takes one ticket plainly (v % 4 == 0), in whichever branch
/// of an if_else runs (1), in whichever of three switch cases runs (2), or in each of two loop
/// passes, inside a switch of two cases (3). Returns the tickets per launch of each vertex.
/// `board_for(tickets per launch)` gives the board; `checks` holds one zeroed cell per vertex
/// (the loops' pass counters) where the tickets' memory is.
inline std::vector<std::uint32_t> record_conditional_dag(
    CommandBuffer& cmd, const Dag& dag,
    const std::function<TicketBoard(std::uint32_t)>& board_for, std::uint32_t* checks) {
  std::vector<std::uint32_t> elements(dag.size, 1);
  for (std::size_t v = 3; v < dag.size; v += 4) elements[v] = 2;
  std::uint32_t per_launch = 0;
  for (auto e : elements) per_launch += e;
  const TicketBoard board = board_for(per_launch);
  std::vector<Command> c;
  c.reserve(dag.size);
  for (std::uint32_t v = 0; v < dag.size; ++v) {
    const Ticket ticket{board, v};
    CommandBuffer a("a"), b("b"), third("c");
    for (CommandBuffer* body : {&a, &b, &third}) body->parallel_for(1, ticket);
    switch (v % 4) {
      case 0: c.push_back(cmd.parallel_for(1, ticket)); break;
      case 1: c.push_back(cmd.if_else(TicketsEven{board.counter}, a, b)); break;
      case 2: c.push_back(cmd.switch_on(TicketsModulo{board.counter, 3}, {a, b, third})); break;
      default: {
        CommandBuffer pass("pass");
        pass.switch_on(TicketsModulo{board.counter, 2}, {a, b});
        c.push_back(cmd.loop_while(pass, PassesEachLaunch{checks + v, 2}));
      }
    }
  }
  for (const auto& [p, k] : dag.edges) c[k].after(c[p]);
  return elements;
}

/// Records `dag` as record_conditional_dag does, over host memory, runs it `launches` times
/// back to back on the host backend and returns what the oracle found wrong (empty: nothing).
inline std::string run_conditional_dag_on_host(const Dag& dag, std::uint32_t launches) {
  Observations obs(dag.size * launches);
  std::vector<std::uint32_t> checks(dag.size, 0);
  CommandBuffer cmd("conditional oracle");
  const auto elements = record_conditional_dag(cmd, dag, [&](std::uint32_t per) {
    return obs.board(static_cast<std::uint32_t>(dag.size), per, launches);
  }, checks.data());
  Executable exe = compile(cmd, Device::host());
  Queue q(Device::host());
  for (std::uint32_t k = 0; k < launches; ++k) exe.launch(q);
  q.wait();
  return check_order(dag, obs, launches, elements);
}

}  // namespace cmdgraph::testing
