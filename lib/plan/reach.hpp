// Reach: questions "does u reach v?" over a DAG, answered with bitsets: a bit per source u,
// Reach::width sources a pass, each pass one walk of the topological order over the window
// its questions span. The whole costs edges x window x passes / 64 word operations: cheap
// when the questions span short windows, as those of the hazard analysis do (memory is
// reused nearby in a program, so its conflicts join nearby commands).
#pragma once

#include "command/edge.hpp"

#include <algorithm>
#include <array>
#include <bit>
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

/// A source of reachability questions, as in_passes groups them.
struct ReachSource {
  std::uint32_t first, last;  // its questions, in in_passes's order of them
  std::uint32_t at, span;     // its rank, and how far beyond it its farthest question lies
  std::uint32_t group = 0;    // sources of one group share passes
};

/// Puts `sources` (in rank order) into passes of at most Reach::width sources each, as
/// [begin, end) ranges of `sources` as reordered: several groupings are tried and the one
/// whose passes' windows hold the fewest ranks in all is kept (a pass costs a step per rank
/// of its window, which runs from its first source to its farthest target). By rank, with
/// sources that reach far (beyond four times the median span) in passes of their own; or by
/// how far they reach (spans within a factor of 2, 4 or 8), then by rank. The first suits
/// spans alike, the others spans spread over orders of magnitude (a program's rarely
/// rewritten memory), where one far source per pass stretched every window.
inline std::vector<std::pair<std::size_t, std::size_t>> passes_of(std::vector<ReachSource>& sources) {
  std::vector<std::uint32_t> spans;
  spans.reserve(sources.size());
  for (const ReachSource& s : sources) spans.push_back(s.span);
  std::nth_element(spans.begin(), spans.begin() + spans.size() / 2, spans.end());
  const std::uint64_t far = 4 * std::uint64_t{spans[spans.size() / 2]} + 64;
  // Grouping 0: near and far; k = 1, 2, 3: spans within a factor of 2^k (33 groups at most).
  const auto group_of = [&](const ReachSource& s, int grouping) {
    return grouping == 0 ? (s.span <= far ? 0u : 1u)
                         : static_cast<std::uint32_t>(std::bit_width(s.span)) / grouping;
  };
  // The ranks a grouping's passes walk, counted in one walk in rank order (a pass is closed
  // when full, the rest at the end), without putting the sources in order.
  const auto ranks_of = [&](int grouping) {
    struct Open {
      std::uint32_t count = 0, lo = 0, hi = 0;
    };
    std::array<Open, 34> open{};
    std::uint64_t ranks = 0;
    for (const ReachSource& s : sources) {
      Open& p = open[group_of(s, grouping)];
      if (p.count == 0) p.lo = s.at;
      p.hi = std::max(p.hi, s.at + s.span);
      if (++p.count == Reach::width) {
        ranks += p.hi - p.lo + 1;
        p = Open{};
      }
    }
    for (const Open& p : open) ranks += p.count > 0 ? p.hi - p.lo + 1 : 0;
    return ranks;
  };
  int best = 0;
  std::uint64_t fewest = ~std::uint64_t{0};
  for (int grouping = 0; grouping < 4; ++grouping) {
    if (const std::uint64_t ranks = ranks_of(grouping); ranks < fewest) {
      fewest = ranks;
      best = grouping;
    }
  }
  // By group (a counting sort), rank order kept within each; passes of Reach::width at most.
  std::array<std::uint32_t, 35> start{};
  for (ReachSource& s : sources) ++start[(s.group = group_of(s, best)) + 1];
  for (std::size_t g = 1; g < start.size(); ++g) start[g] += start[g - 1];
  std::vector<ReachSource> ordered(sources.size());
  for (const ReachSource& s : sources) ordered[start[s.group]++] = s;
  sources.swap(ordered);
  std::vector<std::pair<std::size_t, std::size_t>> passes;
  for (std::size_t first = 0; first < sources.size();) {
    std::size_t last = first;
    while (last < sources.size() && last - first < Reach::width &&
           sources[last].group == sources[first].group) {
      ++last;
    }
    passes.emplace_back(first, last);
    first = last;
  }
  return passes;
}

/// Answers `questions` (parent: the source, child: the target, ranked after its source: a
/// target before its source cannot be reached, and is not asked) in passes of at most
/// Reach::width sources (grouped by passes_of): for each pass, bit_of[u] numbers its sources
/// (Reach::no_bit elsewhere, as it must be on entry and is on return) and pass(ids, lo, hi)
/// gets the indices of its questions, whose ranks lie in [lo, hi].
template <class Pass>
void in_passes(const std::vector<Edge>& questions, const std::vector<std::uint32_t>& rank,
               std::vector<std::uint32_t>& bit_of, Pass pass) {
  // By the rank of their source (a counting sort: ranks are dense), then each source's reach.
  std::vector<std::uint32_t> starts(rank.size() + 1, 0);
  for (const Edge& q : questions) ++starts[rank[q.parent] + 1];
  for (std::size_t r = 0; r + 1 < starts.size(); ++r) starts[r + 1] += starts[r];
  std::vector<std::uint32_t> ids(questions.size());
  for (std::uint32_t i = 0; i < questions.size(); ++i) ids[starts[rank[questions[i].parent]]++] = i;
  std::vector<ReachSource> sources;
  for (std::uint32_t i = 0; i < ids.size(); ++i) {
    const Edge& q = questions[ids[i]];
    if (i == 0 || q.parent != questions[ids[i - 1]].parent) {
      sources.push_back({i, i, rank[q.parent], 0});
    }
    sources.back().last = i + 1;
    sources.back().span = std::max(sources.back().span, rank[q.child] - rank[q.parent]);
  }
  if (sources.empty()) return;

  std::vector<std::uint32_t> asked;
  for (const auto& [first, last] : passes_of(sources)) {
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
