// Profiling a CUDA launch with timed events: the start and end event of each command, and
// reading a finished launch back into a Profile.
#pragma once

#include "plan/plan.hpp"

#include <cmdgraph/profile.hpp>

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace cmdgraph::detail {

/// A profiled command's timed events, recorded around it.
struct ProfilePoint {
  const Plan* plan;
  std::uint32_t command;
  cudaEvent_t start;
  cudaEvent_t end;
};

/// `points` of the most recent launch of `root`, `launch_start` recorded before all of them
/// (waits for each end event); lanes come from `lanes` (per point) when given, else are packed
/// from the times.
Profile read_profile(const Plan& root, cudaEvent_t launch_start,
                     const std::vector<ProfilePoint>& points, std::string backend,
                     std::chrono::steady_clock::time_point started,
                     const std::vector<unsigned>& lanes = {});

}  // namespace cmdgraph::detail
