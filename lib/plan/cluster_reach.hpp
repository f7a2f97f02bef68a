// ClusterReach: while the sweep (plan/conflicts.cpp) walks one cluster of accesses (ranges that
// overlap or are cut from the same view), which of the commands touching the cluster reach
// each other by edges that never leave them.
// Such a path orders a conflicting pair as well as any other, and it is where a careful hand
// puts its edges (each command after the last one that touched the same memory): validation
// then answers most pairs here, a step per edge into the cluster's commands, and leaves only
// the rest to the whole-plan passes of plan/reach.hpp.
#pragma once

#include "plan/adjacency.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace cmdgraph::detail {

class ClusterReach {
 public:
  /// Commands of the cluster are numbered in the order they enter it; only commands within
  /// one block of this many are related, so a cluster every command touches costs a row of
  /// block / 64 words per command, not a row as long as the plan.
  static constexpr std::uint32_t block = 1024;

  /// `parents`: the plan's edges, child to parents, over `commands` commands.
  ClusterReach(const Adjacency& parents, std::size_t commands)
      : parents_(parents), cluster_of_(commands, none), number_(commands, 0) {}

  /// A new cluster of at most `accesses` accesses.
  void start_cluster(std::size_t accesses) {
    ++cluster_;
    entered_ = 0;
    words_ = static_cast<std::uint32_t>((std::min<std::size_t>(accesses, block) + 63) / 64);
    rows_.clear();
  }

  /// Command `c` touches the cluster. The first time, its row gets the cluster's commands
  /// before it (in its block) that reach it through its parents among them: all of its
  /// accesses to one cluster come together in the sweep, so its parents entered before it.
  void enter(std::uint32_t c) {
    if (cluster_of_[c] == cluster_) return;
    const std::uint32_t at = entered_++;
    cluster_of_[c] = cluster_;
    number_[c] = at;
    if (at % block == 0) rows_.clear();
    rows_.resize(rows_.size() + words_, 0);
    std::uint64_t* row = rows_.data() + std::size_t{at % block} * words_;
    for (const std::uint32_t p : parents_[c]) {
      if (cluster_of_[p] != cluster_ || number_[p] / block != at / block) continue;
      const std::uint64_t* from = rows_.data() + std::size_t{number_[p] % block} * words_;
      for (std::uint32_t w = 0; w < words_; ++w) row[w] |= from[w];
      row[number_[p] % block / 64] |= std::uint64_t{1} << (number_[p] % 64);
    }
  }

  /// Whether `a`, entered earlier in this cluster, reaches `c` by a path among its commands.
  bool reaches(std::uint32_t a, std::uint32_t c) const {
    if (cluster_of_[a] != cluster_ || number_[a] / block != number_[c] / block) return false;
    const std::uint64_t* row = rows_.data() + std::size_t{number_[c] % block} * words_;
    return (row[number_[a] % block / 64] >> (number_[a] % 64)) & 1u;
  }

 private:
  static constexpr std::uint32_t none = ~0u;
  const Adjacency& parents_;
  std::vector<std::uint32_t> cluster_of_;  // by command: the last cluster it entered
  std::vector<std::uint32_t> number_;      // by command: its number in that cluster
  std::uint32_t cluster_ = 0, entered_ = 0, words_ = 1;
  std::vector<std::uint64_t> rows_;        // the current block's rows, words_ each
};

}  // namespace cmdgraph::detail
