// The ordering oracle on CUDA: a DAG recorded as ticket-taking commands, run on a device with
// one backend, and checked edge by edge.
#pragma once

#include "cuda/kernels.cuh"
#include "support/random_dag.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <set>
#include <span>
#include <string>

namespace cmdgraph::testing {

struct Recorded {
  std::vector<std::uint32_t> elements;
  std::size_t clamped = 0;  // indirect vertices whose count exceeds their limit
};

// Orders the DAG's edge e = (p, k) without an edge: cell e of `cells` is touched by p then
// k, as read-after-write, write-after-read or write-after-write by turns, so inferring
// edges from declared access (Hazards::infer) must give back exactly the DAG's edges.
inline void declare_edges(std::vector<Command>& c, const Dag& dag, View<int> cells) {
  for (std::size_t e = 0; e < dag.edges.size(); ++e) {
    const auto [p, k] = dag.edges[e];
    REQUIRE(p < k);  // inference orders in recording order
    const View<int> cell = cells.subview(e, 1);
    switch (e % 3) {
      case 0: c[p].writes(cell); c[k].reads(cell); break;
      case 1: c[p].reads(cell); c[k].writes(cell); break;
      default: c[p].reads_writes(cell); c[k].writes(cell); break;
    }
  }
}

/// What write_counts writes for vertex v: 300, or 500 (clamped to 300) for odd ones.
inline std::uint32_t write_counts_asks(std::size_t v) { return v % 2 == 0 ? 300 : 500; }

// Vertex v is a parallel_for_indirect of at most 300 elements reading its count from
// `counts[v]` (every 11th, when `counts` is not empty: write_counts fills it), or a
// parallel_for_if of 300 elements that `counts[v]` (not 0) enables (every 22nd of them, 15
// and on), a raw kernel
// launch (every 4th of the others, unless `portable`; every other one of those update-free), a 300-element parallel_for (every 3rd
// of the others) or a one-element parallel_for. Edges are recorded, or declared as access to
// `cells` when it is not empty (declare_edges). `costs`: each vertex's cost() when not empty.
inline Recorded record_dag(CommandBuffer& cmd, const Dag& dag,
                           const std::function<TicketBoard(std::uint32_t)>& board_for,
                           bool portable, View<int> cells = {},
                           EdgeKind kind = EdgeKind::full,
                           std::span<const std::chrono::nanoseconds> costs = {},
                           View<std::uint32_t> counts = {}) {
  Recorded r;
  r.elements.assign(dag.size, 1);
  auto is_indirect = [&](std::size_t v) { return counts.size() > 0 && v % 11 == 4; };
  auto is_flagged = [&](std::size_t v) { return is_indirect(v) && v % 22 == 15; };
  auto is_kernel = [&](std::size_t v) { return !portable && v % 4 == 1 && !is_indirect(v); };
  for (std::size_t v = 0; v < dag.size; ++v) {
    if ((v % 3 == 2 && !is_kernel(v)) || is_indirect(v)) r.elements[v] = 300;
    if (is_indirect(v) && !is_flagged(v) && write_counts_asks(v) > 300) ++r.clamped;
  }
  std::uint32_t per_launch = 0;
  for (auto e : r.elements) per_launch += e;
  const TicketBoard board = board_for(per_launch);
  std::vector<Command> c;
  c.reserve(dag.size);
  for (std::uint32_t v = 0; v < dag.size; ++v) {
    const Ticket t{board, v};
    if (is_flagged(v)) {
      c.push_back(cmd.parallel_for_if(counts.subview(v, 1), 300, t));
    } else if (is_indirect(v)) {
      c.push_back(cmd.parallel_for_indirect(counts.subview(v, 1), 300, t));
    } else if (is_kernel(v)) {
      auto k = cmd.launch(&ticket_kernel, LaunchConfig{{1}, {1}}, t);
      if (v % 8 == 5) k.update_free();  // its node takes its arguments from the applier
      c.push_back(k);
    } else {
      c.push_back(cmd.parallel_for(r.elements[v], t));
    }
    if (!costs.empty()) c.back().cost(costs[v]);
  }
  if (cells.size() == 0) {
    for (const auto& [p, k] : dag.edges) c[k].after(c[p], kind);
  } else {
    declare_edges(c, dag, cells);
  }
  return r;
}

/// The counts record_dag's indirect vertices read (write_counts_asks).
inline Buffer<std::uint32_t> write_counts(Device gpu, std::size_t vertices) {
  Buffer<std::uint32_t> counts(gpu, vertices);
  std::vector<std::uint32_t> values(vertices);
  for (std::size_t v = 0; v < vertices; ++v) values[v] = write_counts_asks(v);
  TEST_CUDA(cudaMemcpy(counts.data(), values.data(), vertices * 4, cudaMemcpyHostToDevice));
  TEST_CUDA(cudaDeviceSynchronize());
  return counts;
}

/// Records `dag` as tickets on `gpu`, runs it `launches` times with `backend` and returns what
/// the oracle found wrong (empty when every edge and count held). `inferred`: the edges are
/// declared as access (declare_edges) and compiled with Hazards::infer. `kind`: of every
/// recorded edge (the ticket kernels wait for their parents first, as programmatic edges ask).
/// `shape`: CompileOptions::shape; `costs`: each vertex's cost() when not empty.
inline std::string run_on_gpu(const Dag& dag, Backend backend, unsigned max_streams,
                              std::uint32_t launches, Observations* out = nullptr,
                              bool portable = false, Device gpu = Device::cuda(0),
                              bool inferred = false, EdgeKind kind = EdgeKind::full,
                              ExecutableStats* stats = nullptr,
                              GraphShape shape = GraphShape::automatic(),
                              std::span<const std::chrono::nanoseconds> costs = {}) {
  // Indirect vertices with raw kernels, unless the edges are programmatic: those join kernels
  // alone (plan.dag->programmatic.edges_join_kernels_only).
  const bool indirect = !portable && kind == EdgeKind::full;
  DeviceBoard board(gpu, dag.size * launches);
  const Buffer<int> cells(gpu, std::max<std::size_t>(inferred ? dag.edges.size() : 0, 1));
  const Buffer<std::uint32_t> counts = write_counts(gpu, dag.size);
  CommandBuffer cmd("oracle");
  const Recorded r = record_dag(cmd, dag, [&](std::uint32_t per) {
    return board.board(static_cast<std::uint32_t>(dag.size), per, launches);
  }, portable, inferred ? cells.view() : View<int>{}, kind, costs,
     indirect ? counts.view() : View<std::uint32_t>{});
  Executable exe = compile(cmd, gpu, {.backend = backend, .max_streams = max_streams,
                                      .hazards = inferred ? Hazards::infer : Hazards::automatic,
                                      .shape = shape});
  REQUIRE(exe.backend() == backend);
  if (inferred) {
    REQUIRE(exe.stats().edges_recorded == 0);
    std::set<std::pair<std::uint32_t, std::uint32_t>> distinct(dag.edges.begin(), dag.edges.end());
    REQUIRE(exe.stats().edges_inferred == distinct.size());
  }
  if (stats) *stats = exe.stats();
  Queue q(gpu);
  for (std::uint32_t k = 0; k < launches; ++k) exe.launch(q);
  q.wait();
  Observations obs = board.read();
  if (out) *out = obs;
  std::string wrong = check_order(dag, obs, launches, r.elements);
  // The odd indirect vertices asked for 500 in every launch: each clamped, and only those.
  const auto clamped = exe.clamped_dispatches();
  if (wrong.empty() && clamped.size() != r.clamped) {
    wrong = std::to_string(clamped.size()) + " indirect commands clamped, expected " +
            std::to_string(r.clamped);
  }
  for (const ClampedDispatch& d : clamped) {
    if (wrong.empty() && (d.times != launches || d.largest != 500)) {
      wrong = "'" + d.command + "' clamped " + std::to_string(d.times) + " times, most " +
              std::to_string(d.largest);
    }
  }
  return wrong;
}

}  // namespace cmdgraph::testing
