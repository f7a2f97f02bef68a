// Loops the host and GPU suites both run: the same recordings on every backend, over memory
// the caller provides (host memory on the host device, device memory on a GPU).
#pragma once

#include <cmdgraph/cmdgraph.hpp>
#include <cmdgraph/portable.hpp>

#include <cstddef>

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

}  // namespace cmdgraph::testing
