// Preparing the streams backend's tasks: what each enqueues, on which class of lane, and which
// kernels launch programmatically.
#include "backend/streams/stream_tasks.hpp"

#include <utility>

namespace cmdgraph::detail {
namespace {

// The priority each task's kernels inherit from the executed buffers around it. flat.nested
// lists inner buffers before the buffers around them: walked backwards, inner ones win.
std::vector<std::optional<int>> inherited_priorities(const FlatPlan& flat, int device) {
  std::vector<std::optional<int>> inherited(flat.tasks.size());
  for (auto n = flat.nested.rbegin(); n != flat.nested.rend(); ++n) {
    const std::optional<int> p =
        kernel_priority(n->plan->command(n->command), device, inherited[n->entry]);
    for (std::uint32_t t = n->entry + 1; t < n->exit; ++t) inherited[t] = p;
  }
  return inherited;
}

}  // namespace

std::vector<StreamTask> prepare_tasks(const FlatPlan& flat, const Plan& root,
                                      const ArgumentStore& root_args, int device,
                                      HostCallbacks& callbacks, HostErrors* errors) {
  std::vector<StreamTask> tasks;
  tasks.reserve(flat.tasks.size());
  // Each task's nearest host-task ancestors, in the flat (topological) order.
  std::vector<HostAncestors> after(flat.tasks.size());
  std::vector<HostAncestors> parents;
  for (std::uint32_t i = 0; i < flat.tasks.size(); ++i) {
    const FlatTask& t = flat.tasks[i];
    parents.clear();
    for (std::uint32_t p : flat.parents[i]) parents.push_back(after[p]);
    after[i] = merged(parents);
    StreamTask s{&t, t.plan == &root ? &root_args : &t.plan->arguments(), {}, {}, nullptr, {}, {}};
    if (!t.is_join()) {
      s.name = command_label(*t.plan, t.command, root);
      const Payload& payload = t.plan->payload(t.command);
      s.kernel = kernel_launch(payload, *s.args, device);
      if (auto task = host_task(payload)) {
        s.callback = callbacks.add(std::move(task), s.name, errors, after[i]);
        after[i] = only(s.callback);
      }
    }
    tasks.push_back(std::move(s));
  }
  return tasks;
}

std::vector<std::int32_t> lane_classes(const FlatPlan& flat, int device) {
  const std::vector<std::optional<int>> inherited = inherited_priorities(flat, device);
  std::vector<std::int32_t> classes(flat.tasks.size(), lane_class::any);
  for (std::uint32_t t = 0; t < flat.tasks.size(); ++t) {
    const FlatTask& f = flat.tasks[t];
    if (f.is_join() || !code_of(f.plan->payload(f.command))) continue;
    classes[t] = kernel_priority(f.plan->command(f.command), device, inherited[t])
                     .value_or(lane_class::queue);
  }
  return classes;
}

std::size_t set_programmatic(std::vector<StreamTask>& tasks, const FlatPlan& flat,
                             const LaneSchedule& schedule) {
  std::vector<std::int64_t> last(schedule.lanes, -1);  // per lane: the task enqueued last
  std::size_t lowered = 0;
  for (std::uint32_t t : schedule.order) {
    const std::int64_t before = std::exchange(last[schedule.lane[t]], t);
    if (!tasks[t].kernel || before < 0 || !schedule.waits[t].empty() || schedule.fork_wait[t]) {
      continue;
    }
    const FlatTask& f = flat.tasks[t];
    const FlatTask& p = flat.tasks[before];
    if (p.plan == f.plan && !p.is_join() && !schedule.records[before] &&
        f.plan->is_programmatic(p.command, f.command)) {
      tasks[t].launch.programmatic = true;
      ++lowered;
    }
  }
  return lowered;
}

}  // namespace cmdgraph::detail
