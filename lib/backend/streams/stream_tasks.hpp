// The streams backend's tasks as they are enqueued at every launch, prepared at compile time
// from the flat plan: each task's kernel, host callback, lane class and programmatic launch.
#pragma once

#include "backend/cuda_commands/cuda_commands.hpp"
#include "backend/cuda_commands/host_callbacks.hpp"
#include "backend/cuda_graph/graph_builder.hpp"
#include "cuda/handles.hpp"
#include "plan/flat_plan.hpp"
#include "plan/lanes.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace cmdgraph::detail {

// The host enqueues stream work ahead of the GPU, so a body whose runs depend on values the GPU
// computes is decided on the device: each conditional command is a graph of its own (its
// condition kernel, its conditional node, its bodies), built as the graph backend builds one,
// instantiated once and launched on its task's stream in order with the rest.
struct ConditionalGraph {
  BuiltGraph built;  // what `exec` was instantiated from or last updated with
  cuda::GraphExec exec;
};

// One flat task as it is enqueued, prepared at compile time.
struct StreamTask {
  const FlatTask* task;
  const ArgumentStore* args;  // the executable's store for root commands, else the body's
  std::string name;
  std::optional<KernelLaunch> kernel;  // kinds that run one kernel
  HostCallback* callback = nullptr;    // host tasks
  cuda::LaunchAttributes launch;       // programmatic stream serialization
  std::shared_ptr<ConditionalGraph> graph;  // conditional commands
};

/// The tasks of `flat` in its order: names, prepared kernels (with `root_args` for the root
/// plan's commands, a body's own arguments for the others) and host callbacks (added to
/// `callbacks`, their failures reported to `errors`). Conditional graphs are attached later.
std::vector<StreamTask> prepare_tasks(const FlatPlan& flat, const Plan& root,
                                      const ArgumentStore& root_args, int device,
                                      HostCallbacks& callbacks, HostErrors* errors);

/// Each task's lane class: a kernel runs on a lane whose stream has its priority (the queue's
/// when it has none of its own); other tasks go anywhere.
std::vector<std::int32_t> lane_classes(const FlatPlan& flat, int device);

/// Marks the kernel tasks joined by a programmatic edge to the kernel just before them on their
/// stream with nothing enqueued between (no wait, no event record) for programmatic stream
/// serialization. Returns how many.
std::size_t set_programmatic(std::vector<StreamTask>& tasks, const FlatPlan& flat,
                             const LaneSchedule& schedule);

}  // namespace cmdgraph::detail
