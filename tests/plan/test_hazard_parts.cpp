// The hazard analysis's parts on their own (issue 14): the radix sort its large sorts use,
// the order validation sweeps in.
#include "plan/hazards.hpp"
#include "plan/plan.hpp"
#include "plan/radix_sort.hpp"

#include <cmdgraph/cmdgraph.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <set>
#include <utility>
#include <vector>

using namespace cmdgraph;

// Keys spread over few and many bits (addresses a few megabytes apart, pairs of command
// numbers, whole 64-bit words), many of them equal: the order must be std::stable_sort's.
TEST_CASE("hazards.radix_sort_matches_stable_sort" * doctest::timeout(30)) {
  std::mt19937_64 rng(14);
  for (const std::size_t size : {0u, 1u, 100u, 255u, 256u, 5000u}) {
    for (const int bits : {1, 11, 12, 24, 40, 64}) {
      CAPTURE(size);
      CAPTURE(bits);
      const std::uint64_t mask = bits == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bits) - 1;
      const std::uint64_t base = rng() & ~mask;
      std::vector<std::pair<std::uint64_t, std::uint32_t>> items(size);
      for (std::uint32_t i = 0; i < size; ++i) items[i] = {base | (rng() & mask), i};
      // Repeat some keys, so that stability shows.
      for (std::size_t i = 1; i < size; i += 3) items[i].first = items[i - 1].first;
      auto expected = items;
      std::stable_sort(expected.begin(), expected.end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
      detail::radix_sort(items, [](const auto& x) { return x.first; });
      CHECK(items == expected);
    }
  }
}

namespace {

// Kahn's algorithm taking the earliest recorded ready command: what validation_order promises.
std::vector<std::uint32_t> earliest_ready_order(std::size_t n,
                                                const std::vector<std::pair<std::uint32_t, std::uint32_t>>& edges) {
  std::vector<std::vector<std::uint32_t>> children(n);
  std::vector<std::uint32_t> waiting(n, 0);
  for (const auto& [a, b] : edges) {
    children[a].push_back(b);
    ++waiting[b];
  }
  std::set<std::uint32_t> ready;
  for (std::uint32_t c = 0; c < n; ++c) {
    if (waiting[c] == 0) ready.insert(c);
  }
  std::vector<std::uint32_t> order;
  while (!ready.empty()) {
    const std::uint32_t c = *ready.begin();
    ready.erase(ready.begin());
    order.push_back(c);
    for (const std::uint32_t k : children[c]) {
      if (--waiting[k] == 0) ready.insert(k);
    }
  }
  return order;
}

}  // namespace

// Random DAGs whose edges run forward in recording order (recording order itself) and ones
// whose edges follow a shuffled order (the search among ready commands).
TEST_CASE("hazards.validation_order_takes_the_earliest_ready_command" * doctest::timeout(60)) {
  std::mt19937 rng(21);
  for (int round = 0; round < 200; ++round) {
    const std::size_t n = 2 + rng() % 40;
    std::vector<std::uint32_t> rank(n);
    std::iota(rank.begin(), rank.end(), 0u);
    if (round % 2 == 1) std::shuffle(rank.begin(), rank.end(), rng);
    std::vector<std::pair<std::uint32_t, std::uint32_t>> edges;
    for (std::uint32_t a = 0; a < n; ++a) {
      for (std::uint32_t b = 0; b < n; ++b) {
        if (rank[a] < rank[b] && rng() % 100 < 15) edges.emplace_back(a, b);
      }
    }
    CommandBuffer cmd("dag");
    std::vector<Command> c;
    for (std::size_t i = 0; i < n; ++i) c.push_back(cmd.host([] {}));
    for (const auto& [a, b] : edges) c[b].after(c[a]);
    const auto plan = detail::build_plan(*detail::recording_of(cmd), Hazards::off);
    CAPTURE(round);
    CHECK(detail::validation_order(*plan) == earliest_ready_order(n, edges));
  }
}
