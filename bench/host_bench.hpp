// What the CPU benchmarks share: a parallel_for functor with a small kernel's arguments, the
// clock and the median.
#pragma once

#include <cmdgraph/cmdgraph.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <vector>

namespace host_bench {

using Clock = std::chrono::steady_clock;

/// A parallel_for functor: the arguments of a small kernel.
struct Scale {
  float* data;
  float factor;
  CMDGRAPH_HOST_DEVICE void operator()(std::size_t i) const { data[i] *= factor; }
};

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

inline double elapsed_us(Clock::time_point since) {
  return std::chrono::duration<double, std::micro>(Clock::now() - since).count();
}

}  // namespace host_bench
