// The hazard analysis's parts on their own (issue 14): the radix sort its large sorts use,
// the order validation sweeps in, the grouping of reachability questions into passes, the
// pairs the sweep finds ordered by edges among the commands of their cluster.
#include "plan/cluster_reach.hpp"
#include "plan/hazards.hpp"
#include "plan/plan.hpp"
#include "plan/radix_sort.hpp"
#include "plan/reach.hpp"

#include <cmdgraph/cmdgraph.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <tuple>
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

namespace {

// Kahn's algorithm taking the earliest recorded ready command: what validation_order promises.
std::vector<std::uint32_t> earliest_ready_order(std::size_t n,
                                                const std::vector<std::pair<std::uint32_t, std::uint32_t>>& edges) {
  std::vector<std::vector<std::uint32_t>> children(n);
  std::vector<std::uint32_t> waiting(n, 0);
  for (const auto& [a, b] : edges) {
    children[a].push_back(b);
    ++waiting[b];
  }
  std::set<std::uint32_t> ready;
  for (std::uint32_t c = 0; c < n; ++c) {
    if (waiting[c] == 0) ready.insert(c);
  }
  std::vector<std::uint32_t> order;
  while (!ready.empty()) {
    const std::uint32_t c = *ready.begin();
    ready.erase(ready.begin());
    order.push_back(c);
    for (const std::uint32_t k : children[c]) {
      if (--waiting[k] == 0) ready.insert(k);
    }
  }
  return order;
}

}  // namespace

// Random DAGs whose edges run forward in recording order (recording order itself) and ones
// whose edges follow a shuffled order (the search among ready commands).
TEST_CASE("hazards.validation_order_takes_the_earliest_ready_command" * doctest::timeout(60)) {
  std::mt19937 rng(21);
  for (int round = 0; round < 200; ++round) {
    const std::size_t n = 2 + rng() % 40;
    std::vector<std::uint32_t> rank(n);
    std::iota(rank.begin(), rank.end(), 0u);
    if (round % 2 == 1) std::shuffle(rank.begin(), rank.end(), rng);
    std::vector<std::pair<std::uint32_t, std::uint32_t>> edges;
    for (std::uint32_t a = 0; a < n; ++a) {
      for (std::uint32_t b = 0; b < n; ++b) {
        if (rank[a] < rank[b] && rng() % 100 < 15) edges.emplace_back(a, b);
      }
    }
    CommandBuffer cmd("dag");
    std::vector<Command> c;
    for (std::size_t i = 0; i < n; ++i) c.push_back(cmd.host([] {}));
    for (const auto& [a, b] : edges) c[b].after(c[a]);
    const auto plan = detail::build_plan(*detail::recording_of(cmd), Hazards::off);
    CAPTURE(round);
    CHECK(detail::validation_order(*plan) == earliest_ready_order(n, edges));
  }
}

// An inferred edge ordering two commands that conflict over two buffers names the memory of
// the second command's first access, whichever buffer lies lower in memory (the sweep visits
// buffers by address).
TEST_CASE("hazards.inferred_edge_names_the_memory_met_first" * doctest::timeout(30)) {
  Buffer<int> a(Device::host(), 8), b(Device::host(), 8);
  const bool a_lower = a.data() < b.data();
  const Buffer<int>& low = a_lower ? a : b;
  const Buffer<int>& high = a_lower ? b : a;
  for (const bool high_first : {true, false}) {
    CommandBuffer cmd("two");
    cmd.host([] {}).writes(low, "low").writes(high, "high");
    Command second = cmd.host([] {});
    high_first ? second.reads(high, "high").reads(low, "low")
               : second.reads(low, "low").reads(high, "high");
    const auto plan = detail::build_plan(*detail::recording_of(cmd), Hazards::infer);
    REQUIRE(plan->hazards.inferred.size() == 1);
    CHECK(detail::memory_of(*plan, plan->hazards.inferred[0]) == (high_first ? "high" : "low"));
  }
}

// in_sweep_order: by the second command's place in the sequence, then its access, each
// access's conflicts kept together in the order the sweep gave them.
TEST_CASE("hazards.in_sweep_order_sorts_by_second_command_then_access" * doctest::timeout(30)) {
  std::vector<Buffer<int>> buffers;
  for (int b = 0; b < 4; ++b) buffers.emplace_back(Device::host(), 64);
  std::mt19937 rng(23);
  CommandBuffer cmd("random");
  for (int c = 0; c < 300; ++c) {
    Command h = cmd.host([] {});
    for (std::size_t k = 1 + rng() % 3; k > 0; --k) {
      const std::size_t first = rng() % 60, count = 1 + rng() % 4;
      const View<int> v = buffers[rng() % 4].subview(first, count);
      rng() % 3 == 0 ? h.writes(v) : h.reads(v);
    }
  }
  const auto plan = detail::build_plan(*detail::recording_of(cmd), Hazards::off);
  std::vector<std::uint32_t> sequence(plan->size());
  std::iota(sequence.begin(), sequence.end(), 0u);
  std::shuffle(sequence.begin(), sequence.end(), rng);  // any sequence will do for the sweep
  const std::vector<detail::Conflict> found =
      detail::immediate_conflicts(detail::AccessLists(*plan), sequence);
  REQUIRE(found.size() > 100);
  std::vector<detail::Conflict> sorted = found;
  detail::in_sweep_order(sorted, sequence);
  std::vector<std::uint32_t> place(sequence.size());
  for (std::uint32_t i = 0; i < sequence.size(); ++i) place[sequence[i]] = i;
  const auto key = [&](const detail::Conflict& k) { return std::pair(place[k.second], k.second_access); };
  const auto same = [](const detail::Conflict& x, const detail::Conflict& y) {
    return std::tie(x.first, x.second, x.first_access, x.second_access, x.begin, x.end) ==
           std::tie(y.first, y.second, y.first_access, y.second_access, y.begin, y.end);
  };
  // Each access's run of conflicts in `found`, as found, is a run of `sorted`.
  std::size_t at = 0;
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    if (i > 0) CHECK(key(sorted[i - 1]) <= key(sorted[i]));
    if (i == 0 || key(sorted[i - 1]) != key(sorted[i])) {
      at = std::find_if(found.begin(), found.end(), [&](const auto& k) { return key(k) == key(sorted[i]); }) -
           found.begin();
    } else {
      ++at;
    }
    REQUIRE(at < found.size());
    CHECK(same(found[at], sorted[i]));
  }
}

// passes_of: every source in one pass, at most Reach::width a pass, never more ranks walked
// than in rank order with the far sources apart (four times the median span), and with spans
// spread over orders of magnitude fewer.
TEST_CASE("hazards.reach_passes_cover_every_source_in_fewer_ranks" * doctest::timeout(30)) {
  std::mt19937 rng(25);
  for (const bool spread : {false, true}) {
    CAPTURE(spread);
    std::vector<detail::ReachSource> sources;
    for (std::uint32_t at = 0; at < 5000; ++at) {
      const std::uint32_t span = spread ? 1 + rng() % (1u << (rng() % 17)) : 100 + rng() % 50;
      sources.push_back({at, at + 1, at, span});
    }
    const auto ranks_of = [](const std::vector<detail::ReachSource>& s,
                             const std::vector<std::pair<std::size_t, std::size_t>>& passes) {
      std::uint64_t ranks = 0;
      for (const auto& [first, last] : passes) {
        std::uint32_t lo = ~0u, hi = 0;
        for (std::size_t i = first; i < last; ++i) {
          lo = std::min(lo, s[i].at);
          hi = std::max(hi, s[i].at + s[i].span);
        }
        ranks += hi - lo + 1;
      }
      return ranks;
    };
    // In rank order, the far ones after the near ones, never two in one pass.
    std::vector<std::uint32_t> spans;
    for (const auto& s : sources) spans.push_back(s.span);
    std::nth_element(spans.begin(), spans.begin() + spans.size() / 2, spans.end());
    const std::uint64_t far = 4 * std::uint64_t{spans[spans.size() / 2]} + 64;
    auto near_then_far = sources;
    std::stable_partition(near_then_far.begin(), near_then_far.end(),
                          [&](const auto& s) { return s.span <= far; });
    std::vector<std::pair<std::size_t, std::size_t>> plain;
    for (std::size_t first = 0; first < near_then_far.size();) {
      std::size_t last = first;
      while (last < near_then_far.size() && last - first < detail::Reach::width &&
             (near_then_far[last].span <= far) == (near_then_far[first].span <= far)) {
        ++last;
      }
      plain.emplace_back(first, last);
      first = last;
    }
    const std::uint64_t by_rank = ranks_of(near_then_far, plain);

    auto grouped = sources;
    const auto passes = detail::passes_of(grouped);
    std::set<std::uint32_t> seen;
    std::size_t next = 0;
    for (const auto& [first, last] : passes) {
      CHECK(first == next);
      CHECK(last > first);
      CHECK(last - first <= detail::Reach::width);
      for (std::size_t i = first; i < last; ++i) seen.insert(grouped[i].at);
      next = last;
    }
    CHECK(next == sources.size());
    CHECK(seen.size() == sources.size());
    const std::uint64_t ranks = ranks_of(grouped, passes);
    MESSAGE("ranks " << ranks << " against " << by_rank);
    CHECK(ranks <= by_rank);
    if (spread) CHECK(ranks * 5 < by_rank * 4);  // a fifth fewer at least
  }
}

namespace {

// Whether each command reaches each other one under the plan's kept edges (brute force).
std::vector<std::vector<bool>> closure_of(const detail::Plan& plan) {
  const std::size_t n = plan.size();
  std::vector<std::vector<bool>> reach(n, std::vector<bool>(n, false));
  for (auto it = plan.dag->order.rbegin(); it != plan.dag->order.rend(); ++it) {
    for (const std::uint32_t k : plan.dag->children[*it]) {
      reach[*it][k] = true;
      for (std::uint32_t x = 0; x < n; ++x) reach[*it][x] = reach[*it][x] || reach[k][x];
    }
  }
  return reach;
}

// `commands` host commands touching random slices of `buffers` buffers of 64 ints; each
// command follows, with probability `careful`, the last command that touched each buffer it
// touches (as a careful hand would), and otherwise a random earlier command one time in four.
CommandBuffer random_touches(std::mt19937& rng, int commands, int buffer_count, double careful,
                             std::vector<Buffer<int>>& buffers) {
  for (int b = 0; b < buffer_count; ++b) buffers.emplace_back(Device::host(), 64);
  CommandBuffer cmd("touches");
  std::vector<Command> made, last(buffers.size());
  std::uniform_real_distribution<double> unit(0, 1);
  for (int c = 0; c < commands; ++c) {
    Command h = cmd.host([] {});
    for (std::size_t k = 1 + rng() % 3; k > 0; --k) {
      const std::size_t b = rng() % buffers.size(), first = rng() % 60, count = 1 + rng() % 4;
      const View<int> v = buffers[b].subview(first, count);
      rng() % 3 == 0 ? h.writes(v) : h.reads(v);
      if (last[b].valid() && last[b] != h && unit(rng) < careful) h.after(last[b]);
      last[b] = h;
    }
    if (!made.empty() && rng() % 4 == 0) h.after(made[rng() % made.size()]);
    made.push_back(h);
  }
  return cmd;
}

}  // namespace

// What the sweep marks ordered_nearby a path of edges orders (never a guess), and a careful
// hand's edges (given all, as validation gives them, not only those the reduction kept)
// order every conflict nearby: no pair is left to the whole-plan passes.
// 1,500 commands on one buffer span two of ClusterReach's blocks.
TEST_CASE("hazards.conflicts_ordered_nearby_are_ordered" * doctest::timeout(60)) {
  std::mt19937 rng(31);
  struct Shape {
    int commands, buffers;
    double careful;
  };
  for (const Shape shape : {Shape{200, 4, 1.0}, Shape{200, 4, 0.5}, Shape{200, 1, 0.3},
                            Shape{1500, 1, 1.0}, Shape{1500, 1, 0.7}}) {
    CAPTURE(shape.commands);
    CAPTURE(shape.careful);
    std::vector<Buffer<int>> buffers;
    CommandBuffer cmd = random_touches(rng, shape.commands, shape.buffers, shape.careful, buffers);
    const auto plan = detail::build_plan(*detail::recording_of(cmd), Hazards::off);
    const auto reach = closure_of(*plan);
    const auto order = detail::validation_order(*plan);
    const auto unmarked = detail::immediate_conflicts(detail::AccessLists(*plan), order);
    std::vector<std::pair<std::uint32_t, std::uint32_t>> up;
    for (const detail::Edge& e : plan->dag->edges) up.emplace_back(e.child, e.parent);
    const auto parents = detail::Adjacency::from_pairs(plan->size(), up);
    const auto marked = detail::immediate_conflicts(detail::AccessLists(*plan), order, &parents);
    REQUIRE(marked.size() == unmarked.size());
    REQUIRE(marked.size() > 100);
    std::size_t nearby = 0, across_blocks = 0;
    for (std::size_t i = 0; i < marked.size(); ++i) {
      CHECK_FALSE(unmarked[i].ordered_nearby);
      CHECK(marked[i].first == unmarked[i].first);
      CHECK(marked[i].second == unmarked[i].second);
      if (marked[i].ordered_nearby) CHECK(reach[marked[i].first][marked[i].second]);
      nearby += marked[i].ordered_nearby;
      across_blocks += marked[i].first / detail::ClusterReach::block !=
                       marked[i].second / detail::ClusterReach::block;
    }
    if (shape.careful == 1.0) CHECK(nearby + across_blocks == marked.size());
    CHECK(across_blocks * 20 < marked.size());
    if (shape.careful < 1.0) CHECK(nearby < marked.size());
  }
}
