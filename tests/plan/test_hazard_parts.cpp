// The hazard analysis's parts on their own (issue 14): the radix sort its large sorts use.
#include "plan/radix_sort.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <random>
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
