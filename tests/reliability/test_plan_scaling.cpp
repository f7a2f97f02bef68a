// The build stage's transitive reduction at scale (issue 20 #2): linear work on the shapes that
// made it quadratic, checked by counting the edges it examines (no timing needed) and by a
// generous time bound; and correct, against reachability computed naively on many small DAGs.
// Then the transients' arena and the hazard error at scale (issue 31 #5).
#include "plan/order.hpp"
#include "plan/plan.hpp"
#include "plan/transients.hpp"
#include "record/recording.hpp"
#include "support/expect_error.hpp"
#include "support/plan_shapes.hpp"
#include "support/scale_shapes.hpp"

#include <cmdgraph/cmdgraph.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <bitset>
#include <chrono>
#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <vector>

using namespace cmdgraph;
using namespace cmdgraph::testing;

namespace {

std::vector<detail::Edge> distinct(std::vector<detail::Edge> edges) {
  auto key = [](const detail::Edge& e) { return std::pair(e.parent, e.child); };
  std::sort(edges.begin(), edges.end(), [&](auto& a, auto& b) { return key(a) < key(b); });
  edges.erase(std::unique(edges.begin(), edges.end(),
                          [&](auto& a, auto& b) { return key(a) == key(b); }),
              edges.end());
  return edges;
}

using EdgeSet = std::set<std::pair<std::uint32_t, std::uint32_t>>;

// The reduction by definition: (u, v) stays iff no other child of u reaches v. Reachability by
// a closure over bit sets, in recording terms, without any order.
using Reach = std::bitset<256>;
EdgeSet oracle_reduction(std::size_t n, const std::vector<detail::Edge>& edges) {
  REQUIRE(n <= Reach().size());
  std::vector<Reach> reach(n);  // reach[v]: vertices reachable from v, v excluded
  for (const auto& e : edges) reach[e.parent].set(e.child);
  for (bool changed = true; changed;) {
    changed = false;
    for (std::size_t v = 0; v < n; ++v) {
      Reach r = reach[v];
      for (std::size_t w = 0; w < n; ++w) {
        if (reach[v][w]) r |= reach[w];
      }
      if (r != reach[v]) changed = true;
      reach[v] = r;
    }
  }
  EdgeSet kept;
  for (const auto& e : edges) {
    bool implied = false;
    for (const auto& f : edges) {
      if (f.parent == e.parent && f.child != e.child && reach[f.child][e.child]) {
        implied = true;
      }
    }
    if (!implied) kept.emplace(e.parent, e.child);
  }
  return kept;
}

// A random small recording of one of several families, with barriers and duplicate edges.
void record_random(CommandBuffer& cmd, std::mt19937& rng) {
  const std::size_t n = std::uniform_int_distribution<std::size_t>(2, 60)(rng);
  const int family = std::uniform_int_distribution<int>(0, 4)(rng);
  std::vector<Command> c;
  auto pick = [&](std::size_t below) {
    return std::uniform_int_distribution<std::size_t>(0, below - 1)(rng);
  };
  auto chance = [&](double p) { return std::bernoulli_distribution(p)(rng); };
  // A random relabelling: edges follow `rank`, so recording order is not a topological order.
  // (Not with barriers: they order commands by recording order.)
  const bool barriers = family == 4;
  std::vector<std::size_t> rank(n);
  for (std::size_t i = 0; i < n; ++i) rank[i] = i;
  if (!barriers && chance(0.5)) std::shuffle(rank.begin(), rank.end(), rng);
  std::vector<std::size_t> at_rank(n);
  for (std::size_t i = 0; i < n; ++i) at_rank[rank[i]] = i;
  for (std::size_t i = 0; i < n; ++i) {
    if (barriers && i > 0 && chance(0.15)) cmd.barrier();
    c.push_back(cmd.host([] {}));
  }
  auto edge = [&](std::size_t from_rank, std::size_t to_rank) {
    if (from_rank != to_rank) c[at_rank[to_rank]].after(c[at_rank[from_rank]]);
  };
  switch (family) {
    case 0:  // sparse random
    case 4:
      for (std::size_t v = 1; v < n; ++v) {
        for (std::size_t k = pick(4); k > 0; --k) edge(pick(v), v);
      }
      break;
    case 1:  // dense random
      for (std::size_t v = 1; v < n; ++v) {
        for (std::size_t w = 0; w < v; ++w) {
          if (chance(0.3)) edge(w, v);
        }
      }
      break;
    case 2: {  // ladder with random rungs, skips and lags
      const std::size_t half = n / 2;
      for (std::size_t i = 0; i + 1 < half; ++i) {
        edge(i, i + 1);
        edge(half + i, half + i + 1);
      }
      for (std::size_t i = 0; i < half; ++i) {
        if (chance(0.6)) edge(i, half + std::min(half - 1, i + pick(3)));
        if (chance(0.1)) edge(i, std::min(half - 1, i + 1 + pick(4)));
      }
      break;
    }
    case 3: {  // a chain with joins: commands after many earlier steps
      for (std::size_t v = 1; v < n; ++v) {
        if (chance(0.7)) edge(v - 1, v);
        if (chance(0.2)) {
          for (std::size_t w = 0; w < v; ++w) {
            if (chance(0.5)) edge(w, v);
          }
        }
      }
      break;
    }
  }
  if (chance(0.3)) cmd.barrier();
}

}  // namespace

TEST_CASE("reliability.reduction_matches_reachability_oracle" * doctest::timeout(300)) {
  std::mt19937 rng(20);
  for (int round = 0; round < 3000; ++round) {
    CommandBuffer cmd("oracle");
    record_random(cmd, rng);
    const auto plan = detail::build_plan(*detail::recording_of(cmd));
    const std::size_t n = plan->size();
    const EdgeSet expected = oracle_reduction(n, detail::recording_of(cmd)->edges());
    EdgeSet got;
    for (std::uint32_t v = 0; v < n; ++v) {
      for (std::uint32_t k : plan->dag->children[v]) got.emplace(v, k);
    }
    EdgeSet reversed;
    for (std::uint32_t v = 0; v < n; ++v) {
      for (std::uint32_t p : plan->dag->parents[v]) reversed.emplace(p, v);
    }
    INFO("round " << round << ": " << n << " commands, " << detail::recording_of(cmd)->edges().size()
                  << " edges");
    REQUIRE(got == expected);
    REQUIRE(reversed == expected);
  }
}

// Edges examined by the reduction's searches, per edge, on every shape at 100,000 commands, as
// recorded and with the commands relabelled at random (which changes the topological order the
// searches run in): a quadratic reduction examines thousands per edge here, a linear one a few.
// Not relabelled: the lagging ladder, whose rungs skip half the ladder; in some random orders
// neither topological order separates a rung's target from the next steps, and the search walks
// the steps in between (known, see RELIABILITY.md, issue 20 #2).
TEST_CASE("reliability.reduction_work_is_linear_on_every_shape" * doctest::timeout(300)) {
  std::mt19937 rng(2);
  for (const PlanShape shape : all_plan_shapes) {
    CommandBuffer cmd("shape");
    record_shape(cmd, shape, 100'000);
    const std::size_t n = cmd.size();
    for (const bool relabelled : {false, true}) {
      if (relabelled && shape == PlanShape::lagging_ladder) continue;
      std::vector<detail::Edge> edges = detail::recording_of(cmd)->edges();
      if (relabelled) {
        std::vector<std::uint32_t> label(n);
        for (std::uint32_t v = 0; v < n; ++v) label[v] = v;
        std::shuffle(label.begin(), label.end(), rng);
        for (detail::Edge& e : edges) e = {label[e.parent], label[e.child]};
      }
      edges = distinct(std::move(edges));
      const detail::OrderResult ordered = detail::topological_order(n, edges);
      REQUIRE(ordered.cycle.empty());
      std::vector<std::uint32_t> position(n);
      for (std::uint32_t i = 0; i < n; ++i) position[ordered.order[i]] = i;
      std::uint64_t examined = 0;
      detail::transitive_reduction(n, edges, position, &examined);
      INFO(std::string(to_string(shape)) << (relabelled ? " (relabelled)" : "") << ": "
                                         << examined << " edges examined for " << edges.size()
                                         << " edges");
      CHECK(examined <= 4 * edges.size());
    }
  }
}

namespace {

// The edges that order exactly the conflicting accesses of `n` commands, each touching 1 to
// 3 random slices (up to 1,024 of 4,096 elements) of n / 100 buffers, one touch in three a
// write (bench_hazards's program at the density it has at 100,000 commands), element by
// element: a read after the last writer, a write after the readers since (or the writer,
// when none read). Each write fans out to every reader since, and the fans reach far back.
std::vector<detail::Edge> exact_conflict_edges(std::uint32_t n) {
  std::mt19937 rng(7);
  constexpr std::uint32_t none = ~0u, size = 4096;
  struct Element {
    std::uint32_t writer = none;
    std::vector<std::uint32_t> readers;
  };
  std::vector<std::vector<Element>> memory(n / 100, std::vector<Element>(size));
  std::vector<detail::Edge> edges;
  for (std::uint32_t c = 0; c < n; ++c) {
    for (std::uint32_t k = 1 + rng() % 3; k > 0; --k) {
      const std::uint32_t count = 1 + rng() % 1024, first = rng() % (size - count + 1);
      const bool write = rng() % 3 == 0;
      std::vector<Element>& buffer = memory[rng() % memory.size()];
      for (std::uint32_t i = first; i < first + count; ++i) {
        Element& e = buffer[i];
        if (write) {
          for (const std::uint32_t r : e.readers) {
            if (r != c) edges.push_back({r, c});
          }
          if (e.readers.empty() && e.writer != none && e.writer != c) edges.push_back({e.writer, c});
          e.writer = c;
          e.readers.clear();
        } else {
          if (e.writer != none && e.writer != c) edges.push_back({e.writer, c});
          if (e.readers.empty() || e.readers.back() != c) e.readers.push_back(c);
        }
      }
    }
  }
  return distinct(std::move(edges));
}

}  // namespace

// Where the search would examine many edges per edge (wide fans reaching far back, as the
// edges of every conflicting pair make them), reduce_edges gives it up within its budget and
// reduces by bitsets, with the same result. Here the search examines ~170 edges per edge; at
// 100,000 commands of such edges recorded by hand the build took 5.2 s by search, 0.55 s so.
TEST_CASE("reliability.reduction_of_wide_fans_gives_up_the_search" * doctest::timeout(120)) {
  const std::uint32_t n = 20'000;
  const std::vector<detail::Edge> edges = exact_conflict_edges(n);
  const detail::OrderResult ordered = detail::topological_order(n, edges);
  REQUIRE(ordered.cycle.empty());
  std::vector<std::uint32_t> position(n);
  for (std::uint32_t i = 0; i < n; ++i) position[ordered.order[i]] = i;
  const std::uint64_t budget = detail::search_budget_per_edge * (edges.size() + n);
  CHECK_FALSE(detail::transitive_reduction_within(n, edges, position, budget).has_value());
  const std::vector<detail::Edge> reduced = detail::reduce_edges(n, edges, position);
  CHECK(reduced == detail::transitive_reduction_by_reach(n, edges, position));
  CHECK(reduced.size() < edges.size());
}

// The same shapes through the whole build stage, timed with a bound ~100x what it takes here
// (and ~100x below what the quadratic reduction took: 88 s for the first shape).
TEST_CASE("reliability.plan_100k_of_every_shape_is_fast" * doctest::timeout(600)) {
  for (const PlanShape shape : all_plan_shapes) {
    CommandBuffer cmd("shape");
    record_shape(cmd, shape, 100'000);
    const auto start = std::chrono::steady_clock::now();
    const auto plan = detail::build_plan(*detail::recording_of(cmd));
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    INFO(std::string(to_string(shape)) << ": " << seconds << " s");
    CHECK(seconds < 10.0);
    CHECK(plan->size() == cmd.size());
  }
}

// Issue 31, item 5: shapes whose compile grew with the square (10,000 transients alive
// together took 1.2 s to plan, 100,000 took 274 s; 100,000 unordered writers 25 s to fail),
// checked by their results and by the work the arena layout counts, not by time. 5,000
// transients (10,000 took 5 s under TSan) and 10,000 writers keep them quick under the
// sanitizers; bench/bench_scale times 100,000.
namespace {

constexpr std::size_t scale_n = 5'000, writers_n = 10'000;

std::shared_ptr<const detail::Plan> planned(const CommandBuffer& cmd) {
  return detail::build_plan(*detail::recording_of(cmd), Hazards::automatic);
}

}  // namespace

TEST_CASE("reliability.transients_chained_share_one_slot_at_scale") {
  CommandBuffer cmd("chained");
  record_transients_chained(cmd, scale_n);
  const auto plan = planned(cmd);
  const detail::TransientMemory& m = plan->memory;
  REQUIRE(m.list.size() == scale_n);
  CHECK(m.arena_bytes == m.footprint(0));  // one transient's bytes, not n
  std::size_t elsewhere = 0;
  for (const detail::TransientInfo& t : m.list) elsewhere += t.offset != 0;
  CHECK(elsewhere == 0);
  // A few steps a transient (its search finds the free just before it); the layout that
  // asked every pair took ~n^2 / 2.
  INFO(m.layout_steps << " layout steps");
  CHECK(m.layout_steps <= 8 * scale_n);
  for (std::uint32_t t = 0; t < m.list.size(); t += 997) {
    CHECK(m.released_by(m.list[t].release) == t);
  }
}

TEST_CASE("reliability.transients_alive_together_take_a_slot_each_at_scale") {
  CommandBuffer cmd("alive");
  record_transients_alive(cmd, scale_n);
  const auto plan = planned(cmd);
  const detail::TransientMemory& m = plan->memory;
  REQUIRE(m.list.size() == scale_n);
  const std::size_t slot = m.footprint(0);
  CHECK(m.arena_bytes == scale_n * slot);
  std::vector<std::size_t> offsets;
  for (const detail::TransientInfo& t : m.list) offsets.push_back(t.offset);
  std::sort(offsets.begin(), offsets.end());
  std::size_t misplaced = 0;
  for (std::size_t i = 0; i < offsets.size(); ++i) misplaced += offsets[i] != i * slot;
  CHECK(misplaced == 0);  // every transient its own slot: every lifetime overlaps the others
  INFO(m.layout_steps << " layout steps");
  CHECK(m.layout_steps <= 8 * scale_n);
}

// Two waves of transients alive together, a barrier between: the second reuses the first's
// bytes (every free of the first wave reaches every allocation of the second).
TEST_CASE("reliability.transients_of_waves_apart_share_bytes") {
  Buffer<float> x(Device::host(), scale_floats);
  CommandBuffer cmd("waves");
  constexpr std::size_t wave = 300;
  for (int w = 0; w < 2; ++w) {
    cmd.barrier();
    std::vector<Transient<float>> ts;
    for (std::size_t i = 0; i < wave; ++i) ts.push_back(cmd.alloc<float>(scale_floats));
    for (auto& t : ts) cmd.free(t).after(cmd.fill(t, 1.0f, scale_floats).after(t));
  }
  const auto plan = planned(cmd);
  CHECK(plan->memory.arena_bytes == wave * plan->memory.footprint(0));
}

TEST_CASE("reliability.hazard_error_of_many_writers_is_bounded") {
  Buffer<float> buffer(Device::host(), scale_floats);
  CommandBuffer cmd("writers");
  record_unordered_writers(cmd, writers_n, buffer);
  const auto error = CMDGRAPH_EXPECT_ERROR(
      detail::build_plan(*detail::recording_of(cmd), Hazards::validate), errc::hazard);
  REQUIRE(error);
  const std::string what = error->what();
  CHECK(mentions(*error, std::to_string(writers_n - 1) + " hazards"));
  CHECK(mentions(*error, "and " + std::to_string(writers_n - 1 - 50) + " more"));
  CHECK(what.size() < 16 * 1024);
  // The commands of the pairs listed, not of every pair.
  CHECK(error->commands().size() >= 2);
  CHECK(error->commands().size() <= 100);
}
