// read_profile: event synchronisation and elapsed times.
#include "backend/cuda_common/profile_reader.hpp"

#include "cuda/check.hpp"
#include "observe/profile_builder.hpp"

namespace cmdgraph::detail {

Profile read_profile(const ExecutableImpl& exe, cudaEvent_t launch_start,
                     const std::vector<ProfilePoint>& points, std::string backend,
                     std::chrono::steady_clock::time_point started,
                     const std::vector<unsigned>& lanes) {
  std::vector<MeasuredCommand> measured;
  measured.reserve(points.size());
  for (std::size_t i = 0; i < points.size(); ++i) {
    const ProfilePoint& p = points[i];
    CMDGRAPH_CUDA(cuda::no_command, cudaEventSynchronize, p.end);
    float start = 0, end = 0;
    CMDGRAPH_CUDA(cuda::no_command, cudaEventElapsedTime, &start, launch_start, p.start);
    CMDGRAPH_CUDA(cuda::no_command, cudaEventElapsedTime, &end, launch_start, p.end);
    measured.push_back({p.plan, p.command, i < lanes.size() ? lanes[i] : MeasuredCommand::no_lane,
                        start, end});
  }
  return build_profile(exe.plan(), std::move(measured), std::move(backend), started);
}

}  // namespace cmdgraph::detail
