// radix_sort: a stable sort by an unsigned 64-bit key, for the hazard analysis's large sorts
// (accesses by address, edges by their ends), where std::sort's comparisons cost more than
// the few counting passes these keys need.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>
#include <vector>

namespace cmdgraph::detail {

/// Sorts `items` by `key(item)` (a std::uint64_t), keeping equal keys in their order. Only
/// the bits in which the keys differ are sorted on, 11 at a time (a pass per 11 bits, each
/// counting then moving every item): addresses within a few megabytes, or pairs of command
/// numbers, take two or three passes; sorted input, one pass reading it. Short inputs go to
/// std::stable_sort.
/// \post `items` is ordered by key, equal keys as they came.
template <class T, class Key>
void radix_sort(std::vector<T>& items, Key key) {
  if (items.size() < 256) {
    std::stable_sort(items.begin(), items.end(),
                     [&](const T& a, const T& b) { return key(a) < key(b); });
    return;
  }
  constexpr int digit = 11;
  constexpr std::size_t buckets = std::size_t{1} << digit;
  const std::uint64_t first = key(items.front());
  std::uint64_t differ = 0, previous = first;
  bool sorted = true;  // as items often come (edges as recorded): then nothing moves
  for (const T& x : items) {
    const std::uint64_t k = key(x);
    differ |= k ^ first;
    sorted = sorted && previous <= k;
    previous = k;
  }
  if (sorted) return;
  std::vector<T> moved(items.size());
  std::array<std::uint32_t, buckets> starts{};
  for (int shift = 0; shift < 64 && (differ >> shift) != 0; shift += digit) {
    if (((differ >> shift) & (buckets - 1)) == 0) continue;  // the same digit everywhere
    starts.fill(0);
    for (const T& x : items) ++starts[(key(x) >> shift) & (buckets - 1)];
    std::uint32_t sum = 0;
    for (std::uint32_t& s : starts) sum += std::exchange(s, sum);
    for (const T& x : items) moved[starts[(key(x) >> shift) & (buckets - 1)]++] = x;
    items.swap(moved);
  }
}

}  // namespace cmdgraph::detail
