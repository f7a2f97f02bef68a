// The streams backend's event profiling: timed events around every task that is a command,
// from the entry to the exit join of every executed buffer, and the launch's first.
#pragma once

#include "backend/cuda_launch/profile_points.hpp"
#include "cuda/handles.hpp"
#include "plan/flat_plan.hpp"
#include "plan/lanes.hpp"

#include <vector>

namespace cmdgraph::detail {

struct StreamProfiling {
  cuda::Event launch_start;
  std::vector<cuda::Event> events;
  std::vector<ProfilePoint> points;
  std::vector<unsigned> lanes;                    // per point
  std::vector<std::vector<cudaEvent_t>> before;   // per task: events recorded before it
  std::vector<std::vector<cudaEvent_t>> after;    // ... and after it
};

/// The events that time `flat`'s commands on `device`, each on its first task's lane.
StreamProfiling stream_profiling(const FlatPlan& flat, const LaneSchedule& schedule, int device);

}  // namespace cmdgraph::detail
