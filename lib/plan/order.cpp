// Topological sort and cycle finding with Boost.Graph's (non-recursive) depth-first search.
#include "plan/order.hpp"

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/depth_first_search.hpp>
#include <boost/graph/topological_sort.hpp>

#include <algorithm>
#include <iterator>

namespace cmdgraph::detail {
namespace {

using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS>;
using Vertex = boost::graph_traits<Graph>::vertex_descriptor;

// Records the DFS tree and the first back edge, enough to name one whole cycle.
class CycleFinder : public boost::default_dfs_visitor {
 public:
  CycleFinder(std::vector<Vertex>& parent, std::pair<Vertex, Vertex>& back, bool& found)
      : parent_(&parent), back_(&back), found_(&found) {}
  template <class E, class G>
  void tree_edge(E e, const G& g) const {
    (*parent_)[boost::target(e, g)] = boost::source(e, g);
  }
  template <class E, class G>
  void back_edge(E e, const G& g) const {
    if (!*found_) {
      *back_ = {boost::source(e, g), boost::target(e, g)};
      *found_ = true;
    }
  }

 private:
  std::vector<Vertex>* parent_;
  std::pair<Vertex, Vertex>* back_;
  bool* found_;
};

}  // namespace

OrderResult topological_order(std::size_t vertices, const std::vector<Edge>& edges) {
  Graph g(vertices);
  for (const Edge& e : edges) boost::add_edge(e.parent, e.child, g);

  OrderResult result;
  std::vector<Vertex> reversed;
  reversed.reserve(vertices);
  try {
    boost::topological_sort(g, std::back_inserter(reversed));
  } catch (const boost::not_a_dag&) {
    std::vector<Vertex> parent(vertices, vertices);
    std::pair<Vertex, Vertex> back{};
    bool found = false;
    boost::depth_first_search(g, boost::visitor(CycleFinder(parent, back, found)));
    // back = (u, v) with v an ancestor of u: the cycle is v -> ... -> u -> v.
    for (Vertex x = back.first; x != back.second; x = parent[x]) {
      result.cycle.push_back(static_cast<std::uint32_t>(x));
    }
    result.cycle.push_back(static_cast<std::uint32_t>(back.second));
    std::reverse(result.cycle.begin(), result.cycle.end());
    return result;
  }
  result.order.assign(reversed.rbegin(), reversed.rend());
  return result;
}

std::vector<Edge> transitive_reduction(std::size_t vertices, const std::vector<Edge>& edges,
                                       const std::vector<std::uint32_t>& position) {
  // Children of each vertex in topological position order.
  std::vector<std::vector<std::uint32_t>> children(vertices);
  for (const Edge& e : edges) children[e.parent].push_back(e.child);
  for (auto& c : children) {
    std::sort(c.begin(), c.end(),
              [&](std::uint32_t a, std::uint32_t b) { return position[a] < position[b]; });
  }

  // A child c of u is redundant iff an earlier child (in topological order) reaches it. Walk
  // the children in order, marking what each kept child reaches; a later child can only be
  // reached through vertices placed before it, so the search stops past the last child.
  std::vector<Edge> kept;
  kept.reserve(edges.size());
  std::vector<std::uint32_t> mark(vertices, 0);
  std::uint32_t stamp = 0;
  std::vector<std::uint32_t> stack;
  for (std::uint32_t u = 0; u < vertices; ++u) {
    const auto& cs = children[u];
    if (cs.size() <= 1) {
      for (std::uint32_t c : cs) kept.push_back({u, c});
      continue;
    }
    ++stamp;
    const std::uint32_t horizon = position[cs.back()];
    for (std::uint32_t c : cs) {
      if (mark[c] == stamp) continue;
      kept.push_back({u, c});
      stack.assign(1, c);
      mark[c] = stamp;
      while (!stack.empty()) {
        const std::uint32_t x = stack.back();
        stack.pop_back();
        for (std::uint32_t y : children[x]) {
          if (mark[y] != stamp && position[y] <= horizon) {
            mark[y] = stamp;
            stack.push_back(y);
          }
        }
      }
    }
  }
  return kept;
}

}  // namespace cmdgraph::detail
