// Topological sort and cycle finding with Boost.Graph's (non-recursive) depth-first search;
// the transitive reduction, by searches pruned with two topological orders and levels.
#include "plan/order.hpp"

#include "plan/adjacency.hpp"
#include "plan/radix_sort.hpp"
#include "plan/reach.hpp"

#include <boost/graph/compressed_sparse_row_graph.hpp>
#include <boost/graph/depth_first_search.hpp>
#include <boost/graph/topological_sort.hpp>
#include <boost/iterator/transform_iterator.hpp>

#include <algorithm>
#include <iterator>
#include <queue>
#include <span>
#include <utility>

namespace cmdgraph::detail {
namespace {

// Compressed sparse rows: the sorted edges in one array, where an adjacency_list would allocate
// each vertex's out-edges apart (most of a 10,000-command build's allocations).
using Graph = boost::compressed_sparse_row_graph<boost::directedS>;
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
  const auto ends = [](const Edge& e) { return std::pair<Vertex, Vertex>(e.parent, e.child); };
  const Graph g(boost::edges_are_sorted, boost::make_transform_iterator(edges.begin(), ends),
                boost::make_transform_iterator(edges.end(), ends), vertices);

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

namespace {

// A second topological order, built to disagree with `position` wherever the DAG allows
// (FELINE's "Y" coordinate): Kahn's algorithm that always takes, of the vertices whose parents
// are all placed, the one `position` puts last. Two independent vertices then tend to appear in
// opposite orders in the two, so "y comes before t in both" is a tight test for "y may reach t".
std::vector<std::uint32_t> second_order(const Adjacency& children,
                                        const std::vector<std::uint32_t>& position) {
  const std::size_t n = children.vertices();
  std::vector<std::uint32_t> parents_left(n, 0);
  for (std::size_t v = 0; v < n; ++v) {
    for (std::uint32_t c : children[v]) ++parents_left[c];
  }
  // Max-heap of (position, vertex) over the vertices ready to be placed.
  std::priority_queue<std::pair<std::uint32_t, std::uint32_t>> ready;
  for (std::uint32_t v = 0; v < n; ++v) {
    if (parents_left[v] == 0) ready.emplace(position[v], v);
  }
  std::vector<std::uint32_t> second(n, 0);
  std::uint32_t next = 0;
  while (!ready.empty()) {
    const std::uint32_t v = ready.top().second;
    ready.pop();
    second[v] = next++;
    for (std::uint32_t c : children[v]) {
      if (--parents_left[c] == 0) ready.emplace(position[c], c);
    }
  }
  return second;
}

// The longest path from a source to each vertex, in edges.
std::vector<std::uint32_t> levels(const Adjacency& children,
                                  const std::vector<std::uint32_t>& position) {
  const std::size_t n = children.vertices();
  std::vector<std::uint32_t> by_position(n), level(n, 0);
  for (std::uint32_t v = 0; v < n; ++v) by_position[position[v]] = v;
  for (std::uint32_t v : by_position) {
    for (std::uint32_t c : children[v]) level[c] = std::max(level[c], level[v] + 1);
  }
  return level;
}

// The largest key among the targets not reached yet: `sorted` holds the targets in increasing
// key order and `top` only moves down, so a vertex's searches cost O(targets) here in all.
struct Bound {
  std::vector<std::uint32_t> sorted;
  std::size_t top = 0;
  template <class Reached>
  std::uint32_t get(const std::vector<std::uint32_t>& key, Reached reached) {
    while (top > 0 && reached(sorted[top - 1])) --top;
    return top > 0 ? key[sorted[top - 1]] : 0;
  }
};

}  // namespace

// Why this algorithm. A child c of u is redundant iff another child of u reaches it, and only
// children placed before c (in topological order) can. So for each u we walk its children in
// order, keep each one not reached yet and search forward from it, marking what it reaches.
// Searching everything a child reaches is quadratic on common shapes (a chain closed by a
// barrier: every step's search walks the rest of the chain), so the search is cut short:
//  - it ends as soon as every child of u is marked (kept or reached);
//  - it only enters a vertex y that may still reach a child t not marked yet, which requires
//    y before t in `position`, y before t in a second topological order (second_order), and
//    level(y) < level(t) (longest paths from the sources grow along every edge). Each test is
//    made against the largest value among the unmarked children (Bound), so it is cheap and
//    only ever too generous, never wrong: pruning a vertex that fails it loses no path.
// The second order and the levels are what keep ladders (two chains with rungs A_i -> B_i) and
// pipelines linear: searching from A_{i+1} for B_i, A_{i+1} already sits on B_i's level, or
// after B_i in one of the orders (as recorded, and relabelled at random in the tests). Worst case
// (adversarial DAGs) this is still O(V E), as any search-based reduction is: a ladder whose
// rungs skip far ahead (A_i -> B_{i+k}) can, in some recording orders, defeat both orders and
// walk k steps per rung. On the shapes of tests/support/plan_shapes.hpp it examines less than
// one edge per edge (tested).
std::vector<Edge> transitive_reduction(std::size_t vertices, const std::vector<Edge>& edges,
                                       const std::vector<std::uint32_t>& position,
                                       std::uint64_t* edges_examined) {
  return *transitive_reduction_within(vertices, edges, position, ~std::uint64_t{0}, edges_examined);
}

namespace {

// The search of transitive_reduction_within, vertex by vertex (see above for why it is cut
// short where it is).
class PrunedSearch {
 public:
  PrunedSearch(Adjacency children, const std::vector<std::uint32_t>& position)
      : children_(std::move(children)), position_(position),
        second_(second_order(children_, position)), level_(levels(children_, position)),
        marked_(children_.vertices(), 0), target_(children_.vertices(), 0) {}

  // Appends to `kept` the edges from `u` no other child of `u` reaches; false once the search
  // has examined more than `budget` edges in all.
  bool reduce(std::uint32_t u, std::vector<Edge>& kept, std::uint64_t budget) {
    const std::span<const std::uint32_t> cs = children_[u];
    if (cs.size() <= 1) {
      for (std::uint32_t c : cs) kept.push_back({u, c});
      return true;
    }
    start(cs);
    for (std::uint32_t c : cs) {
      if (is_marked(c)) continue;  // reached from an earlier child: redundant
      kept.push_back({u, c});
      marked_[c] = stamp_;
      if (--unmarked_ == 0) break;
      if (may_reach(c) && !search_from(c, budget)) return false;
    }
    return true;
  }
  std::uint64_t examined() const noexcept { return examined_; }

 private:
  bool is_marked(std::uint32_t v) const noexcept { return marked_[v] == stamp_; }

  // A new vertex's children are the targets; the bounds start from all of them.
  void start(std::span<const std::uint32_t> cs) {
    ++stamp_;
    for (std::uint32_t c : cs) target_[c] = stamp_;
    unmarked_ = cs.size();
    auto set_up = [&](Bound& b, const std::vector<std::uint32_t>& key) {
      b.sorted.assign(cs.begin(), cs.end());
      std::sort(b.sorted.begin(), b.sorted.end(),
                [&](std::uint32_t a, std::uint32_t c) { return key[a] < key[c]; });
      b.top = b.sorted.size();
    };
    in_position_.sorted.assign(cs.begin(), cs.end());  // already in position order
    in_position_.top = cs.size();
    set_up(in_second_, second_);
    set_up(in_level_, level_);
  }

  // May y still reach an unmarked child? (Only asked while one is left.)
  bool may_reach(std::uint32_t y) {
    auto marked = [this](std::uint32_t v) { return is_marked(v); };
    return position_[y] < in_position_.get(position_, marked) &&
           second_[y] < in_second_.get(second_, marked) &&
           level_[y] < in_level_.get(level_, marked);
  }

  // Marks what `from` reaches, entering only vertices that may reach an unmarked child.
  bool search_from(std::uint32_t from, std::uint64_t budget) {
    stack_.assign(1, from);
    while (!stack_.empty() && unmarked_ > 0) {
      const std::uint32_t x = stack_.back();
      stack_.pop_back();
      examined_ += children_[x].size();
      if (examined_ > budget) return false;
      // Pushed in position order: the farthest child is searched first.
      for (std::uint32_t y : children_[x]) {
        if (is_marked(y)) continue;
        if (target_[y] == stamp_) {
          marked_[y] = stamp_;
          if (--unmarked_ == 0) break;
          if (may_reach(y)) stack_.push_back(y);
        } else if (may_reach(y)) {
          marked_[y] = stamp_;
          stack_.push_back(y);
        }
      }
    }
    return true;
  }

  Adjacency children_;
  const std::vector<std::uint32_t>& position_;
  std::vector<std::uint32_t> second_, level_;
  std::vector<std::uint32_t> marked_, target_;
  std::uint32_t stamp_ = 0;
  std::size_t unmarked_ = 0;
  std::uint64_t examined_ = 0;
  std::vector<std::uint32_t> stack_;
  Bound in_position_, in_second_, in_level_;
};

}  // namespace

std::optional<std::vector<Edge>> transitive_reduction_within(
    std::size_t vertices, const std::vector<Edge>& edges, const std::vector<std::uint32_t>& position,
    std::uint64_t budget, std::uint64_t* edges_examined) {
  // Children of each vertex in topological position order, in one array.
  std::vector<Edge> by_parent = edges;
  radix_sort(by_parent, [&](const Edge& e) {
    return std::uint64_t{e.parent} * vertices + position[e.child];
  });
  PrunedSearch search(Adjacency::from_pairs(vertices, by_parent), position);
  std::vector<Edge> kept;
  kept.reserve(edges.size());
  for (std::uint32_t u = 0; u < vertices; ++u) {
    if (!search.reduce(u, kept, budget)) return std::nullopt;
  }
  if (edges_examined) *edges_examined = search.examined();
  return kept;
}

std::vector<Edge> reduce_edges(std::size_t vertices, const std::vector<Edge>& edges,
                               const std::vector<std::uint32_t>& position) {
  const std::uint64_t budget = search_budget_per_edge * (edges.size() + vertices);
  if (auto searched = transitive_reduction_within(vertices, edges, position, budget)) {
    return std::move(*searched);
  }
  return transitive_reduction_by_reach(vertices, edges, position);
}

// An edge u -> v is implied by another path when some other parent of v is reached from u;
// one forward walk per pass answers that for a bit per u (plan/reach.hpp). Vertices with one
// child keep it without a question.
std::vector<Edge> transitive_reduction_by_reach(std::size_t vertices,
                                                const std::vector<Edge>& edges,
                                                const std::vector<std::uint32_t>& position) {
  std::vector<std::uint32_t> order(vertices), out_degree(vertices, 0);
  for (std::uint32_t v = 0; v < vertices; ++v) order[position[v]] = v;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> up;
  up.reserve(edges.size());
  for (const Edge& e : edges) {
    ++out_degree[e.parent];
    up.emplace_back(e.child, e.parent);
  }
  const Adjacency parents = Adjacency::from_pairs(vertices, up);
  std::vector<Edge> questions;
  for (const Edge& e : edges) {
    if (out_degree[e.parent] > 1) questions.push_back(e);
  }
  std::vector<bool> implied(questions.size(), false);
  std::vector<std::uint32_t> bit_of(vertices, Reach::no_bit);
  std::vector<Reach> rows;
  in_passes(questions, position, bit_of, [&](const std::vector<std::uint32_t>& ids,
                                             std::uint32_t lo, std::uint32_t hi) {
    reach_forward(order, position, lo, hi, bit_of, parents, rows);
    for (const std::uint32_t i : ids) {
      const auto [u, v] = questions[i];
      for (std::uint32_t p : parents[v]) {
        if (p != u && position[p] >= lo && rows[position[p] - lo].test(bit_of[u])) {
          implied[i] = true;
          break;
        }
      }
    }
  });

  // As transitive_reduction gives them: by parent, each one's children in position order.
  std::vector<Edge> kept;
  kept.reserve(edges.size());
  for (std::size_t i = 0; i < questions.size(); ++i) {
    if (!implied[i]) kept.push_back(questions[i]);
  }
  for (const Edge& e : edges) {
    if (out_degree[e.parent] == 1) kept.push_back(e);
  }
  std::sort(kept.begin(), kept.end(), [&](const Edge& a, const Edge& b) {
    return std::pair(a.parent, position[a.child]) < std::pair(b.parent, position[b.child]);
  });
  return kept;
}

}  // namespace cmdgraph::detail
