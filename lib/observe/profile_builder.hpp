// Turning raw per-command times of one launch, whichever backend measured them, into a
// Profile: root commands first in recording order, edges between measured commands, and lanes
// packed from the times where the backend has none of its own.
#pragma once

#include "plan/plan.hpp"

#include <cmdgraph/profile.hpp>

#include <chrono>
#include <cstdint>
#include <limits>
#include <vector>

namespace cmdgraph::detail {

struct MeasuredCommand {
  static constexpr unsigned no_lane = std::numeric_limits<unsigned>::max();
  const Plan* plan;        // the root plan or a nested one
  std::uint32_t command;
  unsigned lane = no_lane;  // no_lane: pack by time
  double start_ms = 0;     // from the launch's start
  double end_ms = 0;
};

Profile build_profile(const Plan& root, std::vector<MeasuredCommand> measured, std::string backend,
                      std::chrono::steady_clock::time_point started);

}  // namespace cmdgraph::detail
