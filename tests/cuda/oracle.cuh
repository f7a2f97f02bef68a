// The ordering oracle on CUDA: a DAG recorded as ticket-taking commands, run on a device with
// one backend, and checked edge by edge.
#pragma once

#include "cuda/kernels.cuh"
#include "support/random_dag.hpp"

#include <doctest/doctest.h>

#include <functional>
#include <string>

namespace cmdgraph::testing {

struct Recorded {
  std::vector<std::uint32_t> elements;
};

// Vertex v is a raw kernel launch (every 4th, unless `portable`), a 300-element parallel_for
// (every 3rd) or a one-element parallel_for.
inline Recorded record_dag(CommandBuffer& cmd, const Dag& dag,
                           const std::function<TicketBoard(std::uint32_t)>& board_for,
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

/// Records `dag` as tickets on `gpu`, runs it `launches` times with `backend` and returns what
/// the oracle found wrong (empty when every edge and count held).
inline std::string run_on_gpu(const Dag& dag, Backend backend, unsigned max_streams,
                              std::uint32_t launches, Observations* out = nullptr,
                              bool portable = false, Device gpu = Device::cuda(0)) {
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

}  // namespace cmdgraph::testing
