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

}  // namespace cmdgraph::testing
