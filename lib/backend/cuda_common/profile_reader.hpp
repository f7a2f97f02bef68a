// Reading a profiled CUDA launch back: wait for every command's end event, then time each
// command's start and end events from the launch's first event.
#pragma once

#include "backend/cuda_graph/graph_builder.hpp"
#include "backend/executable_impl.hpp"

#include <cmdgraph/profile.hpp>

#include <chrono>
#include <string>
#include <vector>

namespace cmdgraph::detail {

/// `points` of `exe`'s most recent launch, `launch_start` recorded before all of them; lanes
/// come from `lanes` (per point) when given, else are packed from the times.
Profile read_profile(const ExecutableImpl& exe, cudaEvent_t launch_start,
                     const std::vector<ProfilePoint>& points, std::string backend,
                     std::chrono::steady_clock::time_point started,
                     const std::vector<unsigned>& lanes = {});

}  // namespace cmdgraph::detail
