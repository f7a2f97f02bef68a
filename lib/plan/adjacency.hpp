// Adjacency: compressed (CSR) neighbour lists, the form backends iterate over.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace cmdgraph::detail {

class Adjacency {
 public:
  Adjacency() = default;
  /// Builds from (from, to) pairs over `vertices` vertices; keeps the pairs' order per vertex.
  template <class Pairs>
  static Adjacency from_pairs(std::size_t vertices, const Pairs& pairs) {
    Adjacency a;
    a.offsets_.assign(vertices + 1, 0);
    for (const auto& [from, to] : pairs) ++a.offsets_[from + 1];
    for (std::size_t v = 0; v < vertices; ++v) a.offsets_[v + 1] += a.offsets_[v];
    a.targets_.resize(a.offsets_.back());
    std::vector<std::uint32_t> fill(a.offsets_.begin(), a.offsets_.end() - 1);
    for (const auto& [from, to] : pairs) a.targets_[fill[from]++] = to;
    return a;
  }

  std::span<const std::uint32_t> operator[](std::size_t v) const noexcept {
    return {targets_.data() + offsets_[v], targets_.data() + offsets_[v + 1]};
  }
  /// Where v's neighbours start among all edges: edge i of v is edge first_edge(v) + i.
  std::size_t first_edge(std::size_t v) const noexcept { return offsets_[v]; }
  std::size_t vertices() const noexcept { return offsets_.empty() ? 0 : offsets_.size() - 1; }
  std::size_t edges() const noexcept { return targets_.size(); }

 private:
  std::vector<std::uint32_t> offsets_;
  std::vector<std::uint32_t> targets_;
};

}  // namespace cmdgraph::detail
