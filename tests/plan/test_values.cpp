// A plan's values: kept where the recording keeps them, a frame of new values made of the
// executable's plan (sharing its DAG), and which commands hold new values, at every depth.
#include "plan/compare.hpp"
#include "plan/new_values.hpp"
#include "plan/plan.hpp"
#include "record/recording.hpp"

#include <cmdgraph/cmdgraph.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <iterator>
#include <new>
#include <random>
#include <vector>

using namespace cmdgraph;
using detail::Plan;

namespace {

std::shared_ptr<const Plan> plan_of(const CommandBuffer& cmd) {
  return detail::build_plan(*detail::recording_of(cmd));
}

}  // namespace

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
