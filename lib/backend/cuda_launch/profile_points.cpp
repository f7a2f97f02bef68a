// read_profile: wait for every command's end event, then time it from the launch's first.
#include "backend/cuda_launch/profile_points.hpp"

#include "cuda/check.hpp"
#include "cuda/stream_ops.hpp"
#include "observe/profile_builder.hpp"

namespace cmdgraph::detail {

Profile read_profile(const Plan& root, cudaEvent_t launch_start,
                     const std::vector<ProfilePoint>& points, std::string backend,
                     std::chrono::steady_clock::time_point started,
                     const std::vector<unsigned>& lanes) {
  std::vector<MeasuredCommand> measured;
  measured.reserve(points.size());
  for (std::size_t i = 0; i < points.size(); ++i) {
    const ProfilePoint& p = points[i];
    if (const cudaError_t s = cuda::synchronize_event(p.end); s != cudaSuccess) {
      cuda::fail(s, "cudaEventSynchronize", cuda::no_command);
    }
    const float start = cuda::elapsed_ms(launch_start, p.start, cuda::no_command);
    const float end = cuda::elapsed_ms(launch_start, p.end, cuda::no_command);
    measured.push_back({p.plan, p.command, i < lanes.size() ? lanes[i] : MeasuredCommand::no_lane,
                        start, end});
  }
  Profile p = build_profile(root, std::move(measured), std::move(backend), started);
  p.timing = "events";
  return p;
}

}  // namespace cmdgraph::detail
