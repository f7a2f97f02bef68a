// Reach: questions "does u reach v?" over a DAG, answered with bitsets: a bit per source u,
// Reach::width sources a pass, each pass one walk of the topological order over the window
// its questions span. The whole costs edges x window x passes / 64 word operations: cheap
// when the questions span short windows, as those of the hazard analysis do (memory is
// reused nearby in a program, so its conflicts join nearby commands).
#pragma once

#include "command/edge.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

namespace cmdgraph::detail {

/// A set of up to `width` sources, one bit each.
struct Reach {
  static constexpr std::uint32_t width = 512;
  static constexpr std::uint32_t no_bit = ~0u;
  std::array<std::uint64_t, width / 64> words{};

  void set(std::uint32_t bit) noexcept { words[bit / 64] |= std::uint64_t{1} << (bit % 64); }
  bool test(std::uint32_t bit) const noexcept { return (words[bit / 64] >> (bit % 64)) & 1u; }
  Reach& operator|=(const Reach& other) noexcept {
    for (std::size_t w = 0; w < words.size(); ++w) words[w] |= other.words[w];
    return *this;
  }
  bool empty() const noexcept {
    std::uint64_t any = 0;
    for (const std::uint64_t w : words) any |= w;
    return any == 0;
  }
  bool meets(const Reach& other) const noexcept {
    std::uint64_t any = 0;
    for (std::size_t w = 0; w < words.size(); ++w) any |= words[w] & other.words[w];
    return any != 0;
  }
};

/// Answers `questions` (parent: the source, child: the target, ranked after its source: a
/// target before its source cannot be reached, and is not asked) in passes of at most
/// Reach::width sources: for each pass, bit_of[u] numbers its sources (Reach::no_bit
/// elsewhere, as it must be on entry and is on return) and pass(ids, lo, hi) gets the
/// indices of its questions, whose ranks lie in [lo, hi]. A pass's window runs from its first
/// source to the farthest target of any, so sources whose questions reach far (beyond four
/// times the median span) go in passes of their own instead of stretching every window.
template <class Pass>
void in_passes(const std::vector<Edge>& questions, const std::vector<std::uint32_t>& rank,
               std::vector<std::uint32_t>& bit_of, Pass pass) {
  // By the rank of their source (a counting sort: ranks are dense), then each source's reach.
  std::vector<std::uint32_t> starts(rank.size() + 1, 0);
  for (const Edge& q : questions) ++starts[rank[q.parent] + 1];
  for (std::size_t r = 0; r + 1 < starts.size(); ++r) starts[r + 1] += starts[r];
  std::vector<std::uint32_t> ids(questions.size());
  for (std::uint32_t i = 0; i < questions.size(); ++i) ids[starts[rank[questions[i].parent]]++] = i;
  struct Source {
    std::uint32_t first, last, span;  // its questions in ids, the farthest's distance
  };
  std::vector<Source> sources;
  for (std::uint32_t i = 0; i < ids.size(); ++i) {
    const Edge& q = questions[ids[i]];
    if (i == 0 || q.parent != questions[ids[i - 1]].parent) sources.push_back({i, i, 0});
    sources.back().last = i + 1;
    sources.back().span = std::max(sources.back().span, rank[q.child] - rank[q.parent]);
  }
  if (sources.empty()) return;
  std::vector<std::uint32_t> spans;
  for (const Source& s : sources) spans.push_back(s.span);
  std::nth_element(spans.begin(), spans.begin() + spans.size() / 2, spans.end());
  const std::uint64_t far = 4 * std::uint64_t{spans[spans.size() / 2]} + 64;
  std::stable_partition(sources.begin(), sources.end(),
                        [&](const Source& s) { return s.span <= far; });

  std::vector<std::uint32_t> asked;
  for (std::size_t first = 0; first < sources.size();) {
    const std::size_t last = std::min(sources.size(), first + Reach::width);
    asked.clear();
    std::uint32_t lo = ~0u, hi = 0;
    for (std::size_t s = first; s < last; ++s) {
      const std::uint32_t u = questions[ids[sources[s].first]].parent;
      bit_of[u] = static_cast<std::uint32_t>(s - first);
      lo = std::min(lo, rank[u]);
      hi = std::max(hi, rank[u] + sources[s].span);
      asked.insert(asked.end(), ids.begin() + sources[s].first, ids.begin() + sources[s].last);
    }
    pass(asked, lo, hi);
    for (std::size_t s = first; s < last; ++s) {
      bit_of[questions[ids[sources[s].first]].parent] = Reach::no_bit;
    }
    first = last;
  }
}

/// Walks ranks [lo, hi] of `order` forward: rows[r - lo] gets the bit of order[r] (if it
/// has one) and the rows of its parents inside the window: the pass's sources that reach it.
template <class Parents>
void reach_forward(const std::vector<std::uint32_t>& order, const std::vector<std::uint32_t>& rank,
                   std::uint32_t lo, std::uint32_t hi, const std::vector<std::uint32_t>& bit_of,
                   const Parents& parents, std::vector<Reach>& rows) {
  if (rows.size() < hi - lo + 1) rows.resize(hi - lo + 1);
  for (std::uint32_t r = lo; r <= hi; ++r) {
    const std::uint32_t v = order[r];
    Reach& row = rows[r - lo] = Reach{};
    if (bit_of[v] != Reach::no_bit) row.set(bit_of[v]);
    for (std::uint32_t p : parents[v]) {
      if (rank[p] >= lo) row |= rows[rank[p] - lo];
    }
  }
}

}  // namespace cmdgraph::detail
