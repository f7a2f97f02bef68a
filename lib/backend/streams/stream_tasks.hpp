// StreamTask: one flat task as the streams backend enqueues it, with everything prepared at
// compile time (kernel parameters, host callbacks), and enqueue() doing the CUDA call.
#pragma once

#include "backend/cuda_common/device_commands.hpp"
#include "backend/cuda_common/host_callbacks.hpp"
#include "plan/flat_plan.hpp"

#include <cuda_runtime_api.h>

#include <string>
#include <vector>

namespace cmdgraph::detail {

struct StreamTask {
  const FlatTask* task;
  const ArgumentStore* args;   // the executable's store for root commands, else the recording's
  std::string name;
  KernelLaunch kernel;         // kernels and parallel_for
  HostCallback* callback = nullptr;
};

/// Prepares every task of `flat`; root commands read `root_args`.
std::vector<StreamTask> prepare_tasks(const FlatPlan& flat, const Plan& root,
                                      const ArgumentStore& root_args, int device,
                                      HostCallbacks& callbacks, HostErrors* errors);
/// Re-reads the kernel launch of a task after an update of its values.
void refresh_kernel(StreamTask& task, int device);
/// Enqueues one task on `stream`.
void enqueue(const StreamTask& task, cudaStream_t stream);

}  // namespace cmdgraph::detail
