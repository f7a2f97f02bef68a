// The build stage: order, transitive reduction against brute force, levels, critical path,
// flattening, and 100,000-command shapes without recursion.
#include "plan/compare.hpp"
#include "plan/flat_plan.hpp"
#include "plan/new_values.hpp"
#include "plan/order.hpp"
#include "plan/plan.hpp"
#include "record/recording.hpp"
#include "support/random_dag.hpp"

#include <cmdgraph/cmdgraph.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <iterator>
#include <new>
#include <random>
#include <set>

using namespace cmdgraph;
using namespace cmdgraph::testing;
using detail::Plan;

namespace {

std::vector<Command> record(CommandBuffer& cmd, const Dag& dag) {
  std::vector<Command> c;
  c.reserve(dag.size);
  for (std::size_t v = 0; v < dag.size; ++v) c.push_back(cmd.host([] {}));
  for (const auto& [p, k] : dag.edges) c[k].after(c[p]);
  return c;
}

std::shared_ptr<const Plan> plan_of(const CommandBuffer& cmd) {
  return detail::build_plan(*detail::recording_of(cmd));
}

using EdgeSet = std::set<std::pair<std::uint32_t, std::uint32_t>>;

EdgeSet reduced_edges(const Plan& plan) {
  EdgeSet s;
  for (std::uint32_t v = 0; v < plan.size(); ++v) {
    for (std::uint32_t k : plan.dag->children[v]) s.emplace(v, k);
  }
  return s;
}

// Brute force: (u, v) stays iff it is an edge and no other path leads from u to v.
EdgeSet brute_force_reduction(const Dag& dag) {
  const std::size_t n = dag.size;
  std::vector<std::vector<bool>> reach(n, std::vector<bool>(n, false));
  EdgeSet edges(dag.edges.begin(), dag.edges.end());
  for (const auto& [p, c] : edges) reach[p][c] = true;
  for (std::size_t k = 0; k < n; ++k)
    for (std::size_t i = 0; i < n; ++i)
      if (reach[i][k])
        for (std::size_t j = 0; j < n; ++j)
          if (reach[k][j]) reach[i][j] = true;
  EdgeSet kept;
  for (const auto& [u, v] : edges) {
    bool implied = false;
    for (const auto& [a, b] : edges) {
      if (a == u && b != v && reach[b][v]) implied = true;
    }
    if (!implied) kept.emplace(u, v);
  }
  return kept;
}

}  // namespace

TEST_CASE("plan.dag->order.respects_every_edge" * doctest::timeout(60)) {
  for (std::uint32_t seed = 0; seed < 50; ++seed) {
    const Dag dag = random_dag(DagShape::shuffled, 300, seed);
    CommandBuffer cmd("order");
    record(cmd, dag);
    auto plan = plan_of(cmd);
    REQUIRE(plan->dag->order.size() == dag.size);
    for (const auto& [p, c] : dag.edges) CHECK(plan->dag->position[p] < plan->dag->position[c]);
  }
}

TEST_CASE("plan.reduction.triangle_keeps_two" * doctest::timeout(10)) {
  CommandBuffer cmd("tri");
  auto a = cmd.host([] {});
  auto b = cmd.host([] {}).after(a);
  auto c = cmd.host([] {}).after(b, a);
  auto plan = plan_of(cmd);
  CHECK(plan->dag->edges.size() == 3);
  CHECK(reduced_edges(*plan) == EdgeSet{{a.index(), b.index()}, {b.index(), c.index()}});
  CHECK(plan->dag->parents[c.index()].size() == 1);
}

TEST_CASE("plan.reduction.matches_brute_force" * doctest::timeout(120)) {
  const DagShape shapes[] = {DagShape::layered, DagShape::random, DagShape::shuffled, DagShape::fan};
  for (std::uint32_t seed = 0; seed < 60; ++seed) {
    const Dag dag = random_dag(shapes[seed % 4], 2 + seed * 2, seed);
    CAPTURE(seed);
    CommandBuffer cmd("reduce");
    record(cmd, dag);
    CHECK(reduced_edges(*plan_of(cmd)) == brute_force_reduction(dag));
  }
}

TEST_CASE("plan.reduction.by_reach_matches_the_search" * doctest::timeout(120)) {
  // The bitset reduction (reduce_edges falls back to it) gives the search's edges in its order,
  // over shapes with wide fans and DAGs large enough for several passes of 512 sources.
  const DagShape shapes[] = {DagShape::layered, DagShape::random, DagShape::shuffled, DagShape::fan,
                             DagShape::chain};
  for (std::uint32_t seed = 0; seed < 40; ++seed) {
    const std::size_t n = seed < 30 ? 2 + seed * 7 : 1500 + seed * 40;
    const Dag dag = random_dag(shapes[seed % 5], n, seed);
    CAPTURE(seed);
    CommandBuffer cmd("reduce");
    record(cmd, dag);
    const auto plan = plan_of(cmd);
    const detail::PlanDag& reduced = *plan->dag;
    const auto searched = detail::transitive_reduction(n, reduced.edges, reduced.position);
    CHECK(detail::transitive_reduction_by_reach(n, reduced.edges, reduced.position) == searched);
    if (n < 200) {
      EdgeSet kept;
      for (const detail::Edge& e : searched) kept.emplace(e.parent, e.child);
      CHECK(kept == brute_force_reduction(dag));
    }
  }
}

TEST_CASE("plan.levels_and_critical_path" * doctest::timeout(10)) {
  // a -> b -> c -> d and a -> e -> d: levels 0,1,2,3 and 1; the critical path is a b c d.
  CommandBuffer cmd("lv");
  auto a = cmd.host([] {});
  auto b = cmd.host([] {}).after(a);
  auto c = cmd.host([] {}).after(b);
  auto e = cmd.host([] {}).after(a);
  auto d = cmd.host([] {}).after(c, e);
  auto plan = plan_of(cmd);
  CHECK(plan->dag->level[a.index()] == 0);
  CHECK(plan->dag->level[b.index()] == 1);
  CHECK(plan->dag->level[e.index()] == 1);
  CHECK(plan->dag->level[d.index()] == 3);
  CHECK(plan->dag->level_count == 4);
  CHECK(plan->dag->critical_path ==
        std::vector<std::uint32_t>{a.index(), b.index(), c.index(), d.index()});
  CHECK(plan->dag->bottom[a.index()] == 4);
}

TEST_CASE("plan.dag->critical_path.ignores_free_commands" * doctest::timeout(10)) {
  // Barriers weigh nothing: a chain of barriers loses to one real command.
  CommandBuffer cmd("w");
  auto a = cmd.host([] {});
  cmd.barrier();
  cmd.host([] {}).after(a);
  auto plan = plan_of(cmd);
  CHECK(plan->dag->bottom[a.index()] == 2);
  CHECK(detail::schedule_weight(CommandKind::barrier) == 0);
}

TEST_CASE("plan.empty" * doctest::timeout(10)) {
  CommandBuffer cmd("empty");
  auto plan = plan_of(cmd);
  CHECK(plan->size() == 0);
  CHECK(plan->dag->critical_path.empty());
  CHECK(detail::flatten(*plan).tasks.empty());
}

TEST_CASE("plan.chain.100k_without_recursion" * doctest::timeout(60)) {
  CommandBuffer cmd("chain");
  record(cmd, random_dag(DagShape::chain, 100000, 0));
  auto plan = plan_of(cmd);
  CHECK(plan->dag->level_count == 100000);
  CHECK(plan->dag->children.edges() == 99999);
  CHECK(plan->dag->critical_path.size() == 100000);
}

TEST_CASE("plan.fan.100k" * doctest::timeout(60)) {
  CommandBuffer cmd("fan");
  const Dag dag = random_dag(DagShape::fan, 100000, 0);
  record(cmd, dag);
  cmd.host([] {});  // plus one isolated command
  auto plan = plan_of(cmd);
  CHECK(plan->dag->level_count == 3);
  CHECK(plan->dag->children.edges() == dag.edges.size());
  CHECK(plan->dag->children[0].size() == 99998);
}

TEST_CASE("plan.flatten.nested_between_joins" * doctest::timeout(10)) {
  CommandBuffer inner("inner");
  auto x = inner.host([] {});
  inner.host([] {});  // two sources, two sinks
  inner.host([] {}).after(x);
  CommandBuffer outer("outer");
  auto a = outer.host([] {});
  auto n = outer.execute(inner).after(a);
  auto z = outer.host([] {}).after(n);
  auto plan = plan_of(outer);
  REQUIRE(plan->bodies_of(n.index()).size() == 1);
  const auto flat = detail::flatten(*plan);
  CHECK(flat.tasks.size() == 2 + 3 + 2);  // a, z, three inner, entry and exit joins
  CHECK(flat.sources.size() == 1);
  // a reaches every inner task before z: walk the flat order.
  std::vector<std::uint32_t> pos(flat.tasks.size());
  for (std::uint32_t t = 0; t < flat.tasks.size(); ++t) pos[t] = t;
  for (std::uint32_t t = 0; t < flat.tasks.size(); ++t) {
    for (std::uint32_t k : flat.children[t]) CHECK(pos[t] < pos[k]);
    if (flat.tasks[t].plan != plan.get()) {
      CHECK(flat.parents[t].size() == 1);  // hangs off the entry join or an inner parent
    }
  }
  CHECK(flat.parents[flat.root_task[z.index()]].size() == 1);
  CHECK(flat.tasks[flat.root_task[n.index()]].is_join());
}

TEST_CASE("plan.commands.shared_with_the_recording_until_it_changes" * doctest::timeout(10)) {
  // A plan reads the recording's commands where they lie: building it, or a frame of new
  // values, copies none; a cost given after compile is the recording's alone.
  float x = 0;
  auto record_frame = [&x](CommandBuffer& cmd, float factor) {
    auto a = cmd.parallel_for(1, [p = &x, factor](std::size_t) { *p *= factor; });
    cmd.parallel_for(1, [p = &x, factor](std::size_t) { *p += factor; }).after(a);
    return a;
  };
  CommandBuffer first("frame");
  Command a = record_frame(first, 1);
  const detail::Recording& rec = *detail::recording_of(first);
  auto plan = plan_of(first);
  CHECK(&plan->command(0) == &rec.commands()[0]);

  CommandBuffer next("frame");
  record_frame(next, 2);
  const detail::Recording& next_rec = *detail::recording_of(next);
  const detail::NewValues values = detail::plan_of_new_values(*plan, next_rec);
  REQUIRE(values.plan);
  CHECK(&values.plan->command(0) == &next_rec.commands()[0]);
  CHECK(values.plan->dag->children.edges() == 1);
  CHECK(values.plan->dag == plan->dag);  // the structure's analysis, not a copy of it

  a.cost(std::chrono::microseconds(5));
  CHECK(rec.commands()[0].hints.cost == std::chrono::microseconds(5));
  CHECK_FALSE(plan->command(0).hints.cost);
}

namespace {

struct Padded {
  char tag;  // then 7 bytes of padding
  double weight;
};
struct alignas(16) Wide {
  float lanes[4];
};
void mixed(char, double, Padded, float, Wide, int*) {}
void nothing() {}

// Records a kernel without parameters, then `mixed`, its Padded built on stack bytes of
// `noise`.
CommandBuffer& record_mixed(CommandBuffer& cmd, int* out, double weight, unsigned char noise) {
  cmd.launch(&nothing, LaunchConfig{{1}, {1}});
  alignas(Padded) unsigned char bytes[sizeof(Padded)];
  std::fill(std::begin(bytes), std::end(bytes), noise);
  auto* padded = new (bytes) Padded;  // default-initialized: the padding keeps the noise
  padded->tag = 'p';
  padded->weight = weight;
  cmd.launch(&mixed, LaunchConfig{{1}, {1}}, 'c', 2.0f, *padded, 3.5, Wide{{1, 2, 3, 4}}, out);
  return cmd;
}

}  // namespace

TEST_CASE("plan.values.kernel_arguments_stored_converted_aligned_and_zero_padded" *
          doctest::timeout(10)) {
  // A kernel's arguments are stored in one copy of their converted values: each slot holds its
  // parameter's value at its alignment, and equal values store equal bytes, the padding inside
  // a value and between values zeroed, so a re-recorded frame compares equal.
  int out = 0;
  CommandBuffer first("first"), same("same"), other("other");
  auto plan = plan_of(record_mixed(first, &out, 0.25, 0x11));
  const auto& kernel = std::get<detail::KernelPayload>(plan->payload(1));
  REQUIRE(kernel.param_count == 6);
  const detail::ArgumentStore& args = plan->arguments();
  const detail::ArgumentStore::Slot p = kernel.first_param;
  const std::size_t aligns[] = {alignof(char), alignof(double), alignof(Padded), alignof(float),
                                alignof(Wide), alignof(int*)};
  const std::size_t sizes[] = {sizeof(char), sizeof(double), sizeof(Padded), sizeof(float),
                               sizeof(Wide), sizeof(int*)};
  for (std::uint32_t i = 0; i < 6; ++i) {
    CAPTURE(i);
    CHECK(reinterpret_cast<std::uintptr_t>(args.data(p + i)) % aligns[i] == 0);
    CHECK(args.size(p + i) == sizes[i]);
  }
  CHECK(args.get<char>(p) == 'c');
  CHECK(args.get<double>(p + 1) == 2.0);  // a float converted to the double parameter
  CHECK(args.get<Padded>(p + 2).weight == 0.25);
  CHECK(args.get<float>(p + 3) == 3.5f);
  CHECK(args.get<Wide>(p + 4).lanes[3] == 4.0f);
  CHECK(args.get<int*>(p + 5) == &out);

  auto same_plan = plan_of(record_mixed(same, &out, 0.25, 0x22));
  CHECK(same_plan->arguments().same_bytes(args, kernel.config, p + 6));
  auto other_plan = plan_of(record_mixed(other, &out, 0.5, 0x11));
  CHECK_FALSE(other_plan->arguments().same_bytes(args, kernel.config, p + 6));
}

TEST_CASE("plan.values.commands_with_new_values_match_a_command_by_command_oracle" *
          doctest::timeout(30)) {
  // Frames of kernels of mixed parameters (padding inside and between values), kernels of
  // none and barriers (no values), recorded again with some values new: sometimes one byte of
  // one value, at every offset a scan by blocks and words meets; the commands found changed are
  // those whose bytes differ, compared a command at a time.
  std::mt19937 rng(7);
  int out[2] = {0, 0};
  for (int round = 0; round < 300; ++round) {
    CAPTURE(round);
    const std::size_t n = 1 + rng() % 60;
    std::vector<int> kinds(n);  // 0: `mixed`, 1: `nothing`, 2: a barrier
    for (int& k : kinds) k = rng() % 4 == 0 ? static_cast<int>(1 + rng() % 2) : 0;
    const double chance = std::array{0.0, 0.02, 0.2, 1.0}[round % 4];
    std::vector<double> weights(n);
    for (double& w : weights) w = static_cast<double>(rng() % 1000);
    struct Values {
      std::vector<unsigned> grid;
      std::vector<char> tag;
      std::vector<double> weight;
      std::vector<int*> ptr;
    };
    auto record = [&](CommandBuffer& cmd, const Values& v) {
      for (std::size_t c = 0; c < n; ++c) {
        const LaunchConfig config{{v.grid[c]}, {1}};
        if (kinds[c] == 2) {
          cmd.barrier();
        } else if (kinds[c] == 1) {
          cmd.launch(&nothing, config);
        } else {
          cmd.launch(&mixed, config, v.tag[c], 2.0f, Padded{'p', v.weight[c]}, 3.5,
                     Wide{{1, 2, 3, 4}}, v.ptr[c]);
        }
      }
    };
    const Values old_values{std::vector<unsigned>(n, 1), std::vector<char>(n, 'c'), weights,
                            std::vector<int*>(n, &out[0])};
    Values new_values = old_values;
    for (std::size_t c = 0; c < n; ++c) {
      if (std::uniform_real_distribution<>(0, 1)(rng) >= chance) continue;
      switch (rng() % 4) {
        case 0: new_values.grid[c] = 2; break;       // the command's first bytes
        case 1: new_values.tag[c] = 'd'; break;      // one byte, after the configuration
        case 2: new_values.ptr[c] = &out[1]; break;  // the last value, in its low bytes
        default: new_values.weight[c] += 1; break;   // a value in the middle
      }
    }
    CommandBuffer before("frame"), now("frame");
    record(before, old_values);
    record(now, new_values);
    const auto was = plan_of(before);
    const auto is = plan_of(now);
    std::vector<std::uint32_t> expected;
    for (std::uint32_t c = 0; c < n; ++c) {
      const detail::ArgumentStore::Slot first = c == 0 ? 0 : is->command(c - 1).slots_end;
      if (!was->arguments().same_bytes(is->arguments(), first, is->command(c).slots_end)) {
        expected.push_back(c);
      }
    }
    const auto found = detail::commands_with_new_values(was->arguments(), *is);
    REQUIRE(found);
    CHECK(*found == expected);
    CHECK(detail::commands_with_new_values(is->arguments(), *is) ==
          std::vector<std::uint32_t>{});
  }
}

TEST_CASE("plan.values.body_changes_name_each_changed_command_once" * doctest::timeout(10)) {
  // A frame of passes: pass a, executed twice, and pass b, which executes `inner`. New values
  // in a's second command and inner's first are found once each, by the pair of body plans
  // they ran with and run with now, whether the frame is compared as a plan built anew or
  // made of the executable's plan.
  int x = 0;
  auto record_frame = [&x](CommandBuffer& primary, int in_a, int in_inner) {
    CommandBuffer a("pass a"), b("pass b"), inner("inner");
    for (int k = 0; k < 3; ++k) {
      const int v = k == 1 ? in_a : k;
      a.parallel_for(1, [p = &x, v](std::size_t) { *p += v; });
    }
    inner.parallel_for(1, [p = &x, in_inner](std::size_t) { *p += in_inner; });
    inner.parallel_for(1, [p = &x](std::size_t) { *p += 1; });
    b.execute(inner);
    auto first = primary.execute(a);
    primary.execute(a).after(first);
    primary.execute(b);
  };
  CommandBuffer first("frame");
  record_frame(first, 1, 1);
  const auto plan = plan_of(first);
  CommandBuffer next("frame");
  record_frame(next, 2, 2);

  auto check = [](const Plan& ran, const Plan& now, const detail::BodyChanges& bodies) {
    CHECK(detail::commands_in(bodies) == 2);
    const Plan& a_ran = *ran.bodies_of(0)[0];
    const Plan& a_now = *now.bodies_of(0)[0];
    const Plan& b_ran = *ran.bodies_of(2)[0];
    const Plan& b_now = *now.bodies_of(2)[0];
    const auto a = bodies.find({&a_ran, &a_now});
    REQUIRE(a != bodies.end());
    CHECK(a->second == std::vector<std::uint32_t>{1});
    const auto b = bodies.find({&b_ran, &b_now});
    REQUIRE(b != bodies.end());
    CHECK(b->second.empty());  // only its body changed
    const auto inner = bodies.find({b_ran.bodies_of(0)[0].get(), b_now.bodies_of(0)[0].get()});
    REQUIRE(inner != bodies.end());
    CHECK(inner->second == std::vector<std::uint32_t>{0});
    CHECK(detail::reversed(bodies).at({&a_now, &a_ran}) == std::vector<std::uint32_t>{1});
  };
  SUBCASE("made of the executable's plan") {
    const detail::NewValues values =
        detail::plan_of_new_values(*plan, *detail::recording_of(next));
    REQUIRE(values.plan);
    check(*plan, *values.plan, values.bodies);
    // A changed body's plan, like the top's, shares the DAG of the plan it ran with.
    CHECK(values.plan->dag == plan->dag);
    CHECK(values.plan->bodies_of(0)[0]->dag == plan->bodies_of(0)[0]->dag);
    CHECK(values.plan->bodies_of(0)[0] != plan->bodies_of(0)[0]);
  }
  SUBCASE("built anew") {
    const auto now = plan_of(next);
    const auto changes = detail::changed_values(*plan, plan->arguments(), *now);
    REQUIRE(changes);
    CHECK(changes->top.empty());
    check(*plan, *now, changes->bodies);
  }
  SUBCASE("the same values: no body changes") {
    CommandBuffer same("frame");
    record_frame(same, 1, 1);
    const detail::NewValues values =
        detail::plan_of_new_values(*plan, *detail::recording_of(same));
    REQUIRE(values.plan);
    CHECK(values.bodies.empty());
  }
}
