// PassWalk: one reachability pass of the validation (plan/hazards.cpp): which of the pass's
// conflicting pairs a path orders, and which edges lie on a path between an ordered pair.
#pragma once

#include "command/edge.hpp"
#include "plan/plan.hpp"
#include "plan/reach.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace cmdgraph::detail {

/// The passes of the validation over ranks [lo, hi] of `order` (in_passes gives them): forward
/// from the pass's sources (is each pair ordered?), then, for the lint, backward from the
/// second command of each ordered pair (bit u: reaches a partner of u the pair with which is
/// ordered): an edge whose parent has a bit forward that its child has backward lies on a
/// path between such a pair, so it is needed.
class PassWalk {
 public:
  PassWalk(const Plan& plan, const std::vector<std::uint32_t>& order,
           const std::vector<std::uint32_t>& rank, const std::vector<Edge>& questions,
           const std::vector<std::uint32_t>& bit_of, bool lint)
      : plan_(plan), order_(order), rank_(rank), questions_(questions), bit_of_(bit_of),
        lint_(lint), needed_(lint ? plan.dag->children.edges() : 0, false) {}

  /// Questions `ids` of a pass over [lo, hi]: adds the unordered ones to `unordered`; returns
  /// how many were ordered.
  std::size_t run(const std::vector<std::uint32_t>& ids, std::uint32_t lo, std::uint32_t hi,
                  std::vector<std::uint32_t>& unordered) {
    by_row(ids, lo, hi);
    reach_forward(order_, rank_, lo, hi, bit_of_, plan_.dag->parents, forward_);
    std::size_t ordered = 0;
    for (std::uint32_t r = 0; r <= hi - lo; ++r) {
      for (std::uint32_t k = row_start_[r]; k < row_start_[r + 1]; ++k) {
        if (forward_[r].test(bit_of_[questions_[at_row_[k]].parent])) {
          ++ordered;
        } else {
          unordered.push_back(at_row_[k]);
          at_row_[k] = none;
        }
      }
    }
    if (lint_) mark_needed(lo, hi);
    return ordered;
  }
  /// Whether edge `e` of plan.dag->children lies on a path between an ordered pair (of the passes
  /// run so far; with `lint` only).
  bool needed(std::size_t e) const { return needed_[e]; }

 private:
  static constexpr std::uint32_t none = ~0u;

  // The pass's questions by their second command's row (a counting sort): answered walking
  // the rows in order, which reads each row once, and the ordered ones kept (else `none`)
  // for the backward walk.
  void by_row(const std::vector<std::uint32_t>& ids, std::uint32_t lo, std::uint32_t hi) {
    row_start_.assign(hi - lo + 2, 0);
    for (const std::uint32_t i : ids) ++row_start_[rank_[questions_[i].child] - lo + 1];
    for (std::uint32_t r = 0; r <= hi - lo; ++r) row_start_[r + 1] += row_start_[r];
    at_row_.resize(ids.size());
    for (const std::uint32_t i : ids) at_row_[row_start_[rank_[questions_[i].child] - lo]++] = i;
    for (std::uint32_t r = hi - lo + 1; r > 0; --r) row_start_[r] = row_start_[r - 1];
    row_start_[0] = 0;
  }

  // The backward walk. Rows no source of the pass reaches are skipped: neither can their
  // ancestors be reached, so no row that is computed reads theirs.
  void mark_needed(std::uint32_t lo, std::uint32_t hi) {
    if (backward_.size() < hi - lo + 1) backward_.resize(hi - lo + 1);
    for (std::uint32_t r = hi + 1; r-- > lo;) {
      if (forward_[r - lo].empty()) continue;
      const std::uint32_t v = order_[r];
      Reach& row = backward_[r - lo] = Reach{};
      for (std::uint32_t k = row_start_[r - lo]; k < row_start_[r - lo + 1]; ++k) {
        if (at_row_[k] != none) row.set(bit_of_[questions_[at_row_[k]].parent]);
      }
      const auto children = plan_.dag->children[v];
      const std::size_t first_edge = plan_.dag->children.first_edge(v);
      for (std::size_t e = 0; e < children.size(); ++e) {
        const std::uint32_t c = rank_[children[e]];
        if (c > hi) continue;
        row |= backward_[c - lo];
        if (!needed_[first_edge + e] && forward_[r - lo].meets(backward_[c - lo])) {
          needed_[first_edge + e] = true;
        }
      }
    }
  }

  const Plan& plan_;
  const std::vector<std::uint32_t>& order_;
  const std::vector<std::uint32_t>& rank_;
  const std::vector<Edge>& questions_;
  const std::vector<std::uint32_t>& bit_of_;
  const bool lint_;
  std::vector<bool> needed_;                     // by edge of plan.dag->children
  std::vector<Reach> forward_, backward_;        // by rank - lo
  std::vector<std::uint32_t> row_start_, at_row_;
};

}  // namespace cmdgraph::detail
