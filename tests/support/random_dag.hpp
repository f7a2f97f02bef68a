// Random DAGs of several shapes for ordering oracles. Vertices are recorded in index order;
// edges may point either way in index terms (the shape decides), never forming a cycle.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace cmdgraph::testing {

enum class DagShape { chain, fan, layered, random, shuffled };

inline const char* to_string(DagShape s) {
  switch (s) {
    case DagShape::chain: return "chain";
    case DagShape::fan: return "fan";
    case DagShape::layered: return "layered";
    case DagShape::random: return "random";
    case DagShape::shuffled: return "shuffled";
  }
  return "?";
}

struct Dag {
  std::size_t size = 0;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> edges;  // (parent, child)
  std::string describe() const {
    return std::to_string(size) + " vertices, " + std::to_string(edges.size()) + " edges";
  }
};

/// A DAG of `n` vertices. chain: 0->1->...; fan: 0 -> every middle vertex -> n-1; layered:
/// about sqrt(n) layers, each vertex with 1-3 parents in earlier layers; random: each vertex
/// with up to 4 parents among lower indices; shuffled: random under a random relabelling, so
/// recording order is not a topological order.
inline Dag random_dag(DagShape shape, std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  Dag dag;
  dag.size = n;
  auto pick = [&](std::size_t below) {
    return static_cast<std::uint32_t>(std::uniform_int_distribution<std::size_t>(0, below - 1)(rng));
  };
  switch (shape) {
    case DagShape::chain:
      for (std::uint32_t i = 1; i < n; ++i) dag.edges.emplace_back(i - 1, i);
      break;
    case DagShape::fan:
      for (std::uint32_t i = 1; i + 1 < n; ++i) {
        dag.edges.emplace_back(0, i);
        dag.edges.emplace_back(i, static_cast<std::uint32_t>(n - 1));
      }
      if (n == 2) dag.edges.emplace_back(0, 1);
      break;
    case DagShape::layered: {
      const std::size_t width = std::max<std::size_t>(1, static_cast<std::size_t>(std::sqrt(n)));
      for (std::uint32_t i = static_cast<std::uint32_t>(width); i < n; ++i) {
        const std::size_t layer_start = i / width * width;
        const int parents = 1 + static_cast<int>(pick(3));
        for (int k = 0; k < parents; ++k) dag.edges.emplace_back(pick(layer_start), i);
      }
      break;
    }
    case DagShape::random:
    case DagShape::shuffled:
      for (std::uint32_t i = 1; i < n; ++i) {
        const int parents = static_cast<int>(pick(5));
        for (int k = 0; k < parents; ++k) dag.edges.emplace_back(pick(i), i);
      }
      if (shape == DagShape::shuffled) {
        std::vector<std::uint32_t> label(n);
        std::iota(label.begin(), label.end(), 0u);
        std::shuffle(label.begin(), label.end(), rng);
        for (auto& [p, c] : dag.edges) {
          p = label[p];
          c = label[c];
        }
      }
      break;
  }
  return dag;
}

}  // namespace cmdgraph::testing
