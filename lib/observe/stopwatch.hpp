// ms_since: how long a stage took, for the times ExecutableStats reports (plan, lower,
// instantiate).
#pragma once

#include <chrono>

namespace cmdgraph::detail {

/// Milliseconds from `start` to now, on the steady clock.
inline double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

}  // namespace cmdgraph::detail
