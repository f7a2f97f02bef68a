// The events that time a streams executable's commands.
#include "backend/streams/stream_profiling.hpp"

namespace cmdgraph::detail {

StreamProfiling stream_profiling(const FlatPlan& flat, const LaneSchedule& schedule, int device) {
  StreamProfiling p;
  p.launch_start = cuda::create_event(device, true);
  p.before.resize(flat.tasks.size());
  p.after.resize(flat.tasks.size());
  auto point = [&](const Plan* plan, std::uint32_t command, std::uint32_t first,
                   std::uint32_t last) {
    p.events.push_back(cuda::create_event(device, true));
    p.events.push_back(cuda::create_event(device, true));
    cudaEvent_t start = p.events[p.events.size() - 2].get(), end = p.events.back().get();
    p.points.push_back({plan, command, start, end});
    p.lanes.push_back(schedule.lane[first]);
    p.before[first].push_back(start);
    p.after[last].push_back(end);
  };
  for (std::uint32_t t = 0; t < flat.tasks.size(); ++t) {
    const FlatTask& task = flat.tasks[t];
    if (!task.is_join()) point(task.plan, task.command, t, t);
  }
  for (const NestedSpan& n : flat.nested) point(n.plan, n.command, n.entry, n.exit);
  return p;
}

}  // namespace cmdgraph::detail
