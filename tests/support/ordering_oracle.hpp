// The ordering oracle: every command takes tickets from one atomic counter and files them by
// launch (ticket / tickets-per-launch); afterwards, per launch, every edge must show its
// parent's last ticket below its child's first, and every command must have run once.
// The Ticket functor runs on the host and, compiled by nvcc, on CUDA devices.
#pragma once

#include "support/random_dag.hpp"

#include <atomic>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#if defined(__CUDACC__)
#define CMDGRAPH_TEST_HD __host__ __device__
#else
#define CMDGRAPH_TEST_HD
#endif

namespace cmdgraph::testing {

/// Where tickets go: arrays laid out [launch][vertex], in host or device memory.
struct TicketBoard {
  std::uint32_t* counter;
  std::uint32_t* first;
  std::uint32_t* last;
  std::uint32_t* runs;
  std::uint32_t vertices;
  std::uint32_t per_launch;  // tickets all commands take together in one launch
  std::uint32_t launches;

  std::size_t cells() const { return std::size_t(vertices) * launches; }
};

struct Ticket {
  TicketBoard board;
  std::uint32_t vertex;

  CMDGRAPH_TEST_HD void operator()(std::size_t) const {
#if defined(__CUDA_ARCH__)
    const std::uint32_t t = atomicAdd(board.counter, 1u);
#else
    const std::uint32_t t = std::atomic_ref<std::uint32_t>(*board.counter).fetch_add(1);
#endif
    std::uint32_t launch = t / board.per_launch;
    if (launch >= board.launches) launch = board.launches - 1;
    const std::size_t at = std::size_t(launch) * board.vertices + vertex;
#if defined(__CUDA_ARCH__)
    atomicMin(board.first + at, t);
    atomicMax(board.last + at, t);
    atomicAdd(board.runs + at, 1u);
#else
    std::atomic_ref<std::uint32_t> first(board.first[at]), last(board.last[at]);
    for (std::uint32_t f = first.load(); t < f && !first.compare_exchange_weak(f, t);) {
    }
    for (std::uint32_t l = last.load(); t > l && !last.compare_exchange_weak(l, t);) {
    }
    std::atomic_ref<std::uint32_t>(board.runs[at]).fetch_add(1);
#endif
  }
};

/// Host copies of a board's arrays, poisoned so that nothing passes unless written.
struct Observations {
  std::vector<std::uint32_t> first, last, runs;
  std::uint32_t counter = 0;

  explicit Observations(std::size_t cells)
      : first(cells, std::numeric_limits<std::uint32_t>::max()), last(cells, 0), runs(cells, 0) {}
  TicketBoard board(std::uint32_t vertices, std::uint32_t per_launch, std::uint32_t launches) {
    return {&counter, first.data(), last.data(), runs.data(), vertices, per_launch, launches};
  }
};

/// An empty string when `obs` is consistent with `dag` over `launches` serialized launches,
/// vertex v taking `elements[v]` tickets per launch; otherwise the first violation.
inline std::string check_order(const Dag& dag, const Observations& obs, std::uint32_t launches,
                               const std::vector<std::uint32_t>& elements) {
  const std::size_t n = dag.size;
  for (std::uint32_t k = 0; k < launches; ++k) {
    const std::size_t base = k * n;
    for (std::size_t v = 0; v < n; ++v) {
      if (obs.runs[base + v] != elements[v]) {
        return "launch " + std::to_string(k) + ": vertex " + std::to_string(v) + " took " +
               std::to_string(obs.runs[base + v]) + " tickets, expected " +
               std::to_string(elements[v]) + " (a missed run, or launches overlapped)";
      }
    }
    for (const auto& [p, c] : dag.edges) {
      if (!(obs.last[base + p] < obs.first[base + c])) {
        return "launch " + std::to_string(k) + ": edge " + std::to_string(p) + " -> " +
               std::to_string(c) + " violated (parent's last ticket " +
               std::to_string(obs.last[base + p]) + ", child's first " +
               std::to_string(obs.first[base + c]) + ")";
      }
    }
  }
  return {};
}

}  // namespace cmdgraph::testing
