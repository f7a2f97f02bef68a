// Loops, ifs and switches the host and GPU suites both run: the same recordings on every
// backend, over memory the caller provides (host memory on the host device, device memory on a
// GPU).
#pragma once

#include <cmdgraph/cmdgraph.hpp>
#include <cmdgraph/portable.hpp>

#include <cstddef>
#include <span>
#include <vector>

namespace cmdgraph::testing {

/// counters[slot] += 1, from one element.
struct Increment {
  int* counters;
  std::size_t slot;
  CMDGRAPH_HOST_DEVICE void operator()(std::size_t) const { counters[slot] += 1; }
};

/// counters[slot] = value for every element of a range of one.
struct Set {
  int* counters;
  std::size_t slot;
  int value;
  CMDGRAPH_HOST_DEVICE void operator()(std::size_t) const { counters[slot] = value; }
};

/// True while counters[slot] < limit.
struct Below {
  const int* counters;
  std::size_t slot;
  int limit;
  CMDGRAPH_HOST_DEVICE bool operator()() const { return counters[slot] < limit; }
};

/// counters[0] = 0; while (counters[0] < limit) counters[0] += 1; then counters[1] is copied
/// from counters[0]. Each launch leaves counters = {limit, limit}, or {0, 0} when limit <= 0
/// (the body never runs). `counters` holds two ints on the device that runs it.
inline CommandBuffer counting_loop(View<int> counters, int limit, CommandBuffer& body) {
  int* c = counters.data();
  body.parallel_for(1, Increment{c, 0}).named("increment");
  CommandBuffer cmd("counting");
  auto reset = cmd.parallel_for(1, Set{c, 0, 0}).named("reset");
  auto loop = cmd.loop_while(body, Below{c, 0, limit}).after(reset).named("count");
  cmd.copy(counters.subview(1, 1), counters.subview(0, 1), 1).after(loop).named("after");
  return cmd;
}

/// 5 outer passes of { counters[1] = 0; 3 inner passes of { counters[1] += 1; counters[2] += 1 };
/// counters[0] += 1 }, after counters[0] = counters[2] = 0. Each launch leaves {5, 3, 15}.
/// `counters` holds three ints on the device that runs it.
inline CommandBuffer nested_loops(int* c, CommandBuffer& inner_body, CommandBuffer& outer_body) {
  inner_body.parallel_for(1, Increment{c, 1});
  inner_body.parallel_for(1, Increment{c, 2});  // counts every inner pass, never reset
  auto reset = outer_body.parallel_for(1, Set{c, 1, 0});
  auto inner = outer_body.loop_while(inner_body, Below{c, 1, 3}).after(reset).named("inner");
  outer_body.parallel_for(1, Increment{c, 0}).after(inner);
  CommandBuffer cmd("nested");
  auto start = cmd.parallel_for(1, Set{c, 0, 0});
  auto zero = cmd.parallel_for(1, Set{c, 2, 0});
  cmd.loop_while(outer_body, Below{c, 0, 5}).after(start, zero).named("outer");
  return cmd;
}

/// True when counters[slot] is even.
struct Even {
  const int* counters;
  std::size_t slot;
  CMDGRAPH_HOST_DEVICE bool operator()() const { return counters[slot] % 2 == 0; }
};

/// counters[1] = 10; if (counters[0] < limit) counters[1] += 1, after counters[0] = value.
/// Each launch leaves counters[1] = 11 when value < limit, else 10.
inline CommandBuffer one_if(int* c, int value, int limit, CommandBuffer& then_body) {
  then_body.parallel_for(1, Increment{c, 1}).named("bump");
  CommandBuffer cmd("one if");
  auto set = cmd.parallel_for(1, Set{c, 0, value});
  auto ten = cmd.parallel_for(1, Set{c, 1, 10});
  cmd.if_then(Below{c, 0, limit}, then_body).after(set, ten).named("maybe");
  return cmd;
}

/// A loop inside an if inside a loop: 4 outer passes of { if counters[0] is even: { counters[1]
/// = 0; 3 inner passes of { counters[1] += 1; counters[2] += 1 } }; counters[0] += 1 }, after
/// counters[0] = counters[2] = 0. The if holds in passes 0 and 2: each launch leaves {4, 3, 6}.
inline CommandBuffer loop_if_loop(int* c, CommandBuffer& inner_body, CommandBuffer& then_body,
                                  CommandBuffer& outer_body) {
  inner_body.parallel_for(1, Increment{c, 1});
  inner_body.parallel_for(1, Increment{c, 2});
  auto reset = then_body.parallel_for(1, Set{c, 1, 0});
  then_body.loop_while(inner_body, Below{c, 1, 3}).after(reset).named("inner");
  auto maybe = outer_body.if_then(Even{c, 0}, then_body).named("even");
  outer_body.parallel_for(1, Increment{c, 0}).after(maybe);
  CommandBuffer cmd("loop if loop");
  auto start = cmd.parallel_for(1, Set{c, 0, 0});
  auto zero = cmd.parallel_for(1, Set{c, 2, 0});
  cmd.loop_while(outer_body, Below{c, 0, 4}).after(start, zero).named("outer");
  return cmd;
}

/// counters[slot] % modulus + offset: a switch selector that cycles through its cases as a
/// tick moves counters[slot], and through values that name none (offset -1, modulus past the
/// cases).
struct Cycle {
  const int* counters;
  std::size_t slot;
  int modulus;
  int offset;
  CMDGRAPH_HOST_DEVICE int operator()() const { return counters[slot] % modulus + offset; }
};

/// 2^32 + low: a selector value past 32 bits, which a plain conversion to the 32-bit value of
/// a conditional handle would wrap onto case `low`.
struct Wide {
  long long low;
  CMDGRAPH_HOST_DEVICE long long operator()() const { return (1LL << 32) + low; }
};

/// Always `value`.
struct Fixed {
  int value;
  CMDGRAPH_HOST_DEVICE int operator()() const { return value; }
};

/// Each launch: counters[0] += 1 (from what the last launch left), then counters[1] += 1 when
/// counters[0] is even, else counters[2] += 1. From counters = {0, 0, 0}, launch k (from 1)
/// leaves {k, k / 2, (k + 1) / 2}: the branch alternates, decided by what the tick wrote.
inline CommandBuffer alternating_if_else(int* c, CommandBuffer& then_body,
                                         CommandBuffer& else_body) {
  then_body.parallel_for(1, Increment{c, 1}).named("then");
  else_body.parallel_for(1, Increment{c, 2}).named("else");
  CommandBuffer cmd("alternating");
  auto tick = cmd.parallel_for(1, Increment{c, 0}).named("tick");
  cmd.if_else(Even{c, 0}, then_body, else_body).after(tick).named("choose");
  return cmd;
}

/// Each launch: counters[0] += 1, then case counters[0] % 5 - 1 of `cases` (three buffers):
/// case k adds 1 to counters[1 + k]. Launches 1, 2, 3 run cases 0, 1, 2; launch 4 selects 3
/// and launch 5 selects -1, which name no case; launch 6 starts over. From counters =
/// {0, 0, 0, 0}, launch k leaves counters[1 + j] = the launches up to k that selected j.
inline CommandBuffer cycling_switch(int* c, std::span<CommandBuffer> cases) {
  for (std::size_t k = 0; k < cases.size(); ++k) {
    cases[k].parallel_for(1, Increment{c, 1 + k}).named("count");
  }
  CommandBuffer cmd("cycling");
  auto tick = cmd.parallel_for(1, Increment{c, 0}).named("tick");
  cmd.switch_on(Cycle{c, 0, 5, -1}, cases).after(tick).named("pick");
  return cmd;
}

/// Launch k of cycling_switch from zeros, as counters {k, case 0, case 1, case 2}.
inline std::vector<int> cycling_switch_counts(int k) {
  std::vector<int> counts{k, 0, 0, 0};
  for (int launch = 1; launch <= k; ++launch) {
    const int selected = launch % 5 - 1;
    if (selected >= 0 && selected < 3) ++counts[1 + selected];
  }
  return counts;
}

/// A switch inside a loop, an if_else and a loop inside its cases, one case empty. Each launch
/// sets counters[0], [1], [2], [4] to 0, then runs 6 passes of { switch on counters[0] % 3:
/// case 0: counters[1] += 1 if counters[0] is even, else counters[2] += 1; case 1:
/// counters[3] = 0, then 2 passes of { counters[3] += 1; counters[4] += 1 }; case 2: nothing;
/// then counters[0] += 1 }, leaving {6, 1, 1, 2, 4} (five ints).
struct NestedConditionals {
  CommandBuffer then_body{"then"}, else_body{"else"}, inner_body{"inner body"};
  CommandBuffer case0{"case0"}, case1{"case1"}, case2{"case2"}, outer_body{"outer body"};
  CommandBuffer cmd{"nested conditionals"};

  explicit NestedConditionals(int* c) {
    then_body.parallel_for(1, Increment{c, 1});
    else_body.parallel_for(1, Increment{c, 2});
    case0.if_else(Even{c, 0}, then_body, else_body).named("parity");
    inner_body.parallel_for(1, Increment{c, 3});
    inner_body.parallel_for(1, Increment{c, 4});
    auto reset = case1.parallel_for(1, Set{c, 3, 0});
    case1.loop_while(inner_body, Below{c, 3, 2}).after(reset).named("inner");
    auto pick = outer_body.switch_on(Cycle{c, 0, 3, 0}, {case0, case1, case2}).named("pick");
    outer_body.parallel_for(1, Increment{c, 0}).after(pick);
    Command zero[] = {cmd.parallel_for(1, Set{c, 0, 0}), cmd.parallel_for(1, Set{c, 1, 0}),
                      cmd.parallel_for(1, Set{c, 2, 0}), cmd.parallel_for(1, Set{c, 4, 0})};
    cmd.loop_while(outer_body, Below{c, 0, 6}).after_all(zero).named("outer");
  }
};

/// What a re-recorded ValuedConditionals may change without changing its structure.
struct ConditionalValues {
  int limit;       // the if_else takes its then branch when 5 < limit
  int then_value;  // what each branch writes to counters[1]
  int else_value;
  int selected;    // the switch's case
  int case0;       // what each case writes to counters[2]
  int case1;
};

/// How a recording of ValuedConditionals differs in structure from the plain one: a third
/// case (writing case1 + 1), or one more command in the else branch (named "one more").
enum class Restructured { no, third_case, longer_else };

/// counters[0] = 5; then counters[1] = then_value if counters[0] < limit, else else_value; and
/// counters[2] = case0 or case1 as `selected` is 0 or 1 (left alone for other values). Three
/// ints.
struct ValuedConditionals {
  CommandBuffer then_body{"then"}, else_body{"else"};
  CommandBuffer case0{"case0"}, case1{"case1"}, case2{"case2"};
  CommandBuffer cmd{"valued"};

  ValuedConditionals(int* c, const ConditionalValues& v, Restructured r = Restructured::no) {
    then_body.parallel_for(1, Set{c, 1, v.then_value}).named("set then");
    else_body.parallel_for(1, Set{c, 1, v.else_value}).named("set else");
    if (r == Restructured::longer_else) {
      else_body.parallel_for(1, Set{c, 1, v.else_value}).named("one more");
    }
    case0.parallel_for(1, Set{c, 2, v.case0}).named("set case0");
    case1.parallel_for(1, Set{c, 2, v.case1}).named("set case1");
    case2.parallel_for(1, Set{c, 2, v.case1 + 1}).named("set case2");
    auto five = cmd.parallel_for(1, Set{c, 0, 5}).named("five");
    cmd.if_else(Below{c, 0, v.limit}, then_body, else_body).after(five).named("branch");
    if (r == Restructured::third_case) {
      cmd.switch_on(Fixed{v.selected}, {case0, case1, case2}).after(five).named("pick");
    } else {
      cmd.switch_on(Fixed{v.selected}, {case0, case1}).after(five).named("pick");
    }
  }
};

}  // namespace cmdgraph::testing
