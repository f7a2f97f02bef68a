// Transient memory in the plan (issue 15, item 2): the words found in every kind of value, the
// lifetime checks with both commands named (validate, off, infer), the inferred edges, the
// arena layout against a brute-force check of random programs, and the record-time refusals.
#include "plan/plan.hpp"
#include "plan/transients.hpp"
#include "record/recording.hpp"
#include "support/expect_error.hpp"

#include <cmdgraph/cmdgraph.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <set>
#include <vector>

using namespace cmdgraph;
using cmdgraph::testing::mentions;
using detail::Plan;

namespace {

void kernel(const float*, float*, int) {}  // never launched: its address names the kernel

struct Twice {
  const float* in;
  float* out;
  void operator()(std::size_t i) const { out[i] = 2 * in[i]; }
};

struct Positive {
  const float* at;
  bool operator()() const { return *at > 0; }
};

std::shared_ptr<const Plan> plan_of(const CommandBuffer& cmd,
                                    Hazards hazards = Hazards::automatic) {
  return detail::build_plan(*detail::recording_of(cmd), hazards);
}

std::set<std::pair<std::uint32_t, std::uint32_t>> kept_edges(const Plan& plan) {
  std::set<std::pair<std::uint32_t, std::uint32_t>> out;
  for (std::uint32_t v = 0; v < plan.size(); ++v) {
    for (std::uint32_t k : plan.dag->children[v]) out.emplace(v, k);
  }
  return out;
}

}  // namespace

TEST_CASE("plan.transients.words_found_in_every_kind_of_value") {
  Buffer<float> x(Device::host(), 64);
  CommandBuffer body("body");
  body.barrier();
  CommandBuffer cmd("found");
  auto t = cmd.alloc<float>(64).named("t");
  auto f = cmd.fill(t, 1.0f, 64).after(t);
  auto k = cmd.launch(&kernel, LaunchConfig{{1}, {64}}, t.data(), x.data(), 64).after(f);
  auto p = cmd.parallel_for(32, Twice{x.data(), t.data() + 32}).after(k);  // inside
  auto c = cmd.copy(t.subview(60, 4), x, 4).after(p);
  auto e = cmd.parallel_for(1, Twice{t.data() + 64, x.data()}).after(c);  // one past the end
  auto l = cmd.loop_while(body, Positive{t.data()}).after(e);
  auto g = cmd.free(t).after(l);
  const auto plan = plan_of(cmd);
  const detail::TransientMemory& m = plan->memory;
  REQUIRE(m.list.size() == 1);
  CHECK(m.list[0].alloc == t.index());
  CHECK(m.list[0].release == g.index());
  std::set<std::uint32_t> users;
  for (const detail::TransientUse& u : m.uses) users.insert(u.command);
  CHECK(users == std::set<std::uint32_t>{k.index(), p.index(), c.index(), f.index(), e.index(),
                                         l.index()});
  std::set<std::uint64_t> deltas;
  for (const detail::TransientSite& s : m.sites) deltas.insert(s.delta);
  // Kernel argument, fill and condition at 0, the functor at 32 floats, the copy at 60, one
  // past the end at 64, the copy's origin (the view it was cut from) at 0.
  CHECK(deltas == std::set<std::uint64_t>{0, 32 * 4, 60 * 4, 64 * 4});
  CHECK(m.arena_bytes == 256);
  CHECK(plan->hazards.applied == Hazards::validate);  // transients switch validation on
}

TEST_CASE("plan.transients.use_before_allocation_names_both") {
  Buffer<float> x(Device::host(), 8);
  SUBCASE("unordered") {
    CommandBuffer cmd("early");
    auto t = cmd.alloc<float>(8).named("scratch");
    cmd.parallel_for(8, Twice{x.data(), t.data()}).named("producer");
    auto e = CMDGRAPH_EXPECT_ERROR(plan_of(cmd), errc::hazard);
    REQUIRE(e);
    CHECK(mentions(*e, "command 'producer' uses transient memory 'scratch' with no path from "
                       "its allocation 'scratch' to it: it may run before the memory exists"));
    CHECK(e->commands() == std::vector<std::string>{"scratch", "producer"});
  }
  SUBCASE("ordered_the_wrong_way") {
    CommandBuffer cmd("early");
    auto t = cmd.alloc<float>(8).named("scratch");
    auto p = cmd.parallel_for(8, Twice{x.data(), t.data()}).named("producer");
    t.after(p);
    auto e = CMDGRAPH_EXPECT_ERROR(plan_of(cmd), errc::hazard);
    REQUIRE(e);
    CHECK(mentions(*e, "command 'producer' uses transient memory 'scratch' before its "
                       "allocation (the edges order 'scratch' after it)"));
    CHECK(e->commands() == std::vector<std::string>{"producer", "scratch"});
  }
}

TEST_CASE("plan.transients.use_after_free_names_both") {
  Buffer<float> x(Device::host(), 8);
  SUBCASE("unordered") {
    CommandBuffer cmd("late");
    auto t = cmd.alloc<float>(8).named("scratch");
    cmd.free(t).after(t).named("release");
    cmd.parallel_for(8, Twice{t.data(), x.data()}).after(t).named("consumer");
    auto e = CMDGRAPH_EXPECT_ERROR(plan_of(cmd), errc::hazard);
    REQUIRE(e);
    CHECK(mentions(*e, "command 'consumer' uses transient memory 'scratch' with no path from "
                       "it to its free 'release': it may run after the memory is released"));
  }
  SUBCASE("ordered_the_wrong_way") {
    CommandBuffer cmd("late");
    auto t = cmd.alloc<float>(8).named("scratch");
    auto r = cmd.free(t).after(t).named("release");
    cmd.parallel_for(8, Twice{t.data(), x.data()}).after(r).named("consumer");
    auto e = CMDGRAPH_EXPECT_ERROR(plan_of(cmd), errc::hazard);
    REQUIRE(e);
    CHECK(mentions(*e, "command 'consumer' uses transient memory 'scratch' after its free "
                       "(the edges order 'release' before it)"));
    CHECK(e->commands() == std::vector<std::string>{"consumer", "release"});
  }
  SUBCASE("freed_before_allocated") {
    CommandBuffer cmd("late");
    auto t = cmd.alloc<float>(8).named("scratch");
    auto r = cmd.free(t).named("release");
    t.after(r);
    auto e = CMDGRAPH_EXPECT_ERROR(plan_of(cmd), errc::hazard);
    REQUIRE(e);
    CHECK(mentions(*e, "transient memory 'scratch' is freed by 'release' before its allocation"));
  }
}

TEST_CASE("plan.transients.checked_whatever_the_mode") {
  // No reads()/writes() anywhere: the lifetimes are still checked, under off too, where other
  // conflicts are not.
  Buffer<float> x(Device::host(), 8);
  for (const Hazards mode : {Hazards::automatic, Hazards::validate, Hazards::off}) {
    CAPTURE(static_cast<int>(mode));
    CommandBuffer cmd("modes");
    auto t = cmd.alloc<float>(8).named("t");
    cmd.parallel_for(8, Twice{t.data(), x.data()}).named("user");
    auto e = CMDGRAPH_EXPECT_ERROR(plan_of(cmd, mode), errc::hazard);
    REQUIRE(e);
    CHECK(mentions(*e, "command 'user' uses transient memory 't' with no path from its "
                       "allocation 't' to it"));
  }
  // Under off, a race on ordinary memory stays unchecked beside a well-ordered transient.
  CommandBuffer cmd("off");
  auto t = cmd.alloc<float>(8).named("t");
  auto u = cmd.parallel_for(8, Twice{x.data(), t.data()}).after(t);
  cmd.free(t).after(u);
  cmd.fill(x, 1.0f, 8);
  cmd.fill(x, 2.0f, 8);
  CHECK(plan_of(cmd, Hazards::off)->hazards.applied == Hazards::off);
  CHECK_THROWS_AS(plan_of(cmd, Hazards::automatic), Error);  // validate sees the fills' race
}

TEST_CASE("plan.transients.infer_adds_allocation_use_free_edges") {
  Buffer<float> x(Device::host(), 8), y(Device::host(), 8);
  CommandBuffer cmd("inferred");
  auto t = cmd.alloc<float>(8).named("t");
  auto a = cmd.parallel_for(8, Twice{t.data(), x.data()}).named("a");
  auto b = cmd.parallel_for(8, Twice{t.data(), y.data()}).named("b");
  auto f = cmd.free(t).named("release");
  const auto plan = plan_of(cmd, Hazards::infer);
  const auto edges = kept_edges(*plan);
  CHECK(edges == std::set<std::pair<std::uint32_t, std::uint32_t>>{
                     {t.index(), a.index()}, {t.index(), b.index()},
                     {a.index(), f.index()}, {b.index(), f.index()}});  // a and b in parallel
  CHECK(plan->hazards.inferred.size() == 4);
}

TEST_CASE("plan.transients.layout_shares_bytes_of_lifetimes_kept_apart") {
  Buffer<float> x(Device::host(), 1000);
  CommandBuffer cmd("stages");
  // Three stages, each allocating after the one before freed: one transient's room suffices.
  Command last = cmd.barrier();
  std::vector<std::size_t> sizes{1000, 700, 300};
  for (std::size_t s = 0; s < sizes.size(); ++s) {
    auto t = cmd.alloc<float>(sizes[s]).after(last);
    auto u = cmd.parallel_for(sizes[s], Twice{x.data(), t.data()}).after(t);
    last = cmd.free(t).after(u);
  }
  // A fourth overlapping the third: it cannot share with it.
  const auto plan = plan_of(cmd);
  CHECK(plan->memory.arena_bytes == 4096);  // 1000 floats, rounded to 256 bytes
  CommandBuffer two("overlap");
  auto a = two.alloc<float>(1000);
  auto b = two.alloc<float>(1000);
  auto ua = two.parallel_for(1000, Twice{x.data(), a.data()}).after(a, b);
  auto ub = two.parallel_for(1000, Twice{x.data(), b.data()}).after(a, b);
  two.free(a).after(ua, ub);
  two.free(b).after(ua, ub);
  CHECK(plan_of(two)->memory.arena_bytes == 2 * 4096);
}

namespace {

// A random program of transients: each allocated after a random earlier command, used by a few
// commands after its allocation, freed (or not) after its users; random extra edges forward.
struct TransientProgram {
  CommandBuffer cmd{"random"};
  std::vector<Command> commands;
};

void record_random(TransientProgram& p, std::mt19937& rng, const Buffer<float>& x) {
  const std::size_t transients = 1 + rng() % 12;
  for (std::size_t i = 0; i < transients; ++i) {
    const std::size_t n = 1 + rng() % 2000;
    auto t = p.cmd.alloc<float>(n);
    if (!p.commands.empty()) t.after(p.commands[rng() % p.commands.size()]);
    p.commands.push_back(t);
    std::vector<Command> users;
    for (std::size_t k = rng() % 4; k > 0; --k) {
      Command u = p.cmd.parallel_for(n, Twice{x.data(), t.data()}).after(t);
      if (rng() % 2 && p.commands.size() > 1) u.after(p.commands[rng() % p.commands.size()]);
      users.push_back(u);
      p.commands.push_back(u);
    }
    if (rng() % 5 != 0) {
      Command f = p.cmd.free(t).after(t);
      f.after_all(users);
      p.commands.push_back(f);
    }
  }
}

// reach[a][b]: a path of the plan's kept edges leads from a to b.
std::vector<std::vector<bool>> closure(const Plan& plan) {
  std::vector<std::vector<bool>> reach(plan.size(), std::vector<bool>(plan.size(), false));
  for (auto it = plan.dag->order.rbegin(); it != plan.dag->order.rend(); ++it) {
    for (std::uint32_t k : plan.dag->children[*it]) {
      reach[*it][k] = true;
      for (std::uint32_t j = 0; j < plan.size(); ++j) reach[*it][j] = reach[*it][j] || reach[k][j];
    }
  }
  return reach;
}

}  // namespace

// Checks `plan`'s layout: aligned, inside the arena, bytes shared only by transients kept
// apart by a path; returns the pairs sharing bytes.
std::size_t check_layout(const Plan& plan) {
  const detail::TransientMemory& m = plan.memory;
  const auto reach = closure(plan);
  std::size_t sum = 0, shared = 0;
  for (std::uint32_t i = 0; i < m.list.size(); ++i) {
    sum += m.footprint(i);
    CHECK(m.list[i].offset % detail::TransientMemory::alignment == 0);
    CHECK(m.list[i].offset + m.footprint(i) <= m.arena_bytes);
    for (std::uint32_t j = i + 1; j < m.list.size(); ++j) {
      const auto& a = m.list[i];
      const auto& b = m.list[j];
      const bool overlap =
          a.offset < b.offset + m.footprint(j) && b.offset < a.offset + m.footprint(i);
      if (!overlap) continue;
      ++shared;
      // Sharing bytes: one's free precedes the other's allocation on every path.
      constexpr auto none = detail::TransientMemory::none;
      const bool apart = (a.release != none && reach[a.release][b.alloc]) ||
                         (b.release != none && reach[b.release][a.alloc]);
      CHECK(apart);
    }
  }
  CHECK(m.arena_bytes <= sum);
  return shared;
}

TEST_CASE("plan.transients.layout_never_overlaps_transients_alive_together") {
  Buffer<float> x(Device::host(), 2000);
  std::mt19937 rng(15);
  std::size_t shared = 0, sweep_shared = 0;
  for (int round = 0; round < 200; ++round) {
    TransientProgram p;
    record_random(p, rng, x);
    const auto plan = plan_of(p.cmd);
    shared += check_layout(*plan);
    // The sweep alone, as plans of more than detail::greedy_transients get it.
    Plan swept = *plan;
    detail::lay_out_arena(swept, detail::ArenaLayout::sweep);
    sweep_shared += check_layout(swept);
    CHECK(plan->memory.arena_bytes <= swept.memory.arena_bytes);
  }
  CHECK(shared > 0);  // the layout did share bytes somewhere
  CHECK(sweep_shared > 0);
}

TEST_CASE("record.transients.reached_only_where_allocated") {
  // Refused as it is recorded, the values it stored dropped: the next command records cleanly.
  Buffer<float> x(Device::host(), 8);
  CommandBuffer owner("owner");
  auto t = owner.alloc<float>(8).named("t");
  SUBCASE("another_buffer") {
    CommandBuffer other("other");
    auto e = CMDGRAPH_EXPECT_ERROR(other.parallel_for(8, Twice{t.data(), x.data()}),
                                   errc::foreign_handle);
    REQUIRE(e);
    CHECK(mentions(*e, "command buffer 'other': parallel_for#0 (recorded at "
                       "test_transients.cpp:"));
    CHECK(mentions(*e, "): a value reaches transient memory of another command buffer"));
    CHECK(other.size() == 0);
    CHECK(detail::recording_of(other)->arguments().slot_count() == 0);
    other.parallel_for(8, Twice{x.data(), x.data()});
    CHECK_NOTHROW(plan_of(other));
  }
  SUBCASE("a_body_of_the_buffer_that_allocates_it") {
    CommandBuffer inner("inner");
    CMDGRAPH_EXPECT_ERROR(inner.copy(t, x, 8), errc::foreign_handle);
    CMDGRAPH_EXPECT_ERROR(inner.launch(&kernel, LaunchConfig{{1}, {1}}, x.data(), t.data() + 8, 1),
                          errc::foreign_handle);  // one past the end is in it too
  }
}

TEST_CASE("record.transients.refusals") {
  CommandBuffer cmd("refusals");
  SUBCASE("zero_size") {
    auto e = CMDGRAPH_EXPECT_ERROR(cmd.alloc<float>(0), errc::invalid_argument);
    REQUIRE(e);
    CHECK(mentions(*e, "alloc#0 (recorded at test_transients.cpp:"));
    CHECK(mentions(*e, "): zero-size allocation"));
    CHECK(cmd.size() == 0);
  }
  SUBCASE("freed_twice") {
    auto t = cmd.alloc<int>(4).named("t");
    cmd.free(t).named("first");
    auto e = CMDGRAPH_EXPECT_ERROR(cmd.free(t), errc::invalid_argument);
    REQUIRE(e);
    CHECK(mentions(*e, "transient memory 't' is already freed by 'first'"));
    CHECK(cmd.size() == 2);
  }
  SUBCASE("another_buffers") {
    CommandBuffer other("other");
    auto t = other.alloc<int>(4);
    CMDGRAPH_EXPECT_ERROR(cmd.free(t), errc::foreign_handle);
    CMDGRAPH_EXPECT_ERROR(cmd.free(Transient<int>()), errc::invalid_handle);
  }
  SUBCASE("allocation_in_a_body") {
    CommandBuffer inner("inner");
    inner.alloc<int>(4).named("scratch");
    auto e = CMDGRAPH_EXPECT_ERROR(cmd.execute(inner), errc::unsupported);
    REQUIRE(e);
    CHECK(mentions(*e, "'inner' allocates transient memory ('scratch')"));
    CHECK(e->commands() == std::vector<std::string>{"execute#0", "scratch"});
  }
}
