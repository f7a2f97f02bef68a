// The launch program of the streams backend, laid out once per schedule.
#include "backend/streams/stream_steps.hpp"

namespace cmdgraph::detail {

namespace {
void copy_kernel(StreamStep& step, const StreamTask& task) {
  if (!task.kernel) return;
  const KernelLaunch& k = *task.kernel;
  step.function = k.function;
  step.params = const_cast<void**>(k.params.data());
  step.grid = k.grid;
  step.block = k.block;
  step.shared_bytes = k.shared_bytes;
  step.programmatic = task.launch.programmatic;
}
}  // namespace

StreamProgram::StreamProgram(const LaneSchedule& schedule, const std::vector<StreamTask>& tasks,
                             const std::vector<cuda::Event>& events)
    : step_of_(tasks.size()) {
  steps_.reserve(schedule.order.size());
  for (std::uint32_t t : schedule.order) {
    StreamStep step;
    step.task = t;
    step.lane = schedule.lane[t];
    step.fork_wait = schedule.fork_wait[t] != 0;
    step.waits_begin = static_cast<std::uint32_t>(waits_.size());
    for (std::uint32_t p : schedule.waits[t]) waits_.push_back(events[p].get());
    step.waits_end = static_cast<std::uint32_t>(waits_.size());
    if (schedule.records[t]) step.record = events[t].get();
    step.name = tasks[t].name.c_str();
    step.name_size = static_cast<std::uint32_t>(tasks[t].name.size());
    copy_kernel(step, tasks[t]);
    step_of_[t] = static_cast<std::uint32_t>(steps_.size());
    steps_.push_back(step);
  }
}

void StreamProgram::refresh(std::uint32_t task, const StreamTask& prepared) {
  copy_kernel(steps_[step_of_[task]], prepared);
}

}  // namespace cmdgraph::detail
