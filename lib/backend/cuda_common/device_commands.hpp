// What both CUDA backends need to know about commands: whether a plan can run on a device,
// how each kernel or parallel_for is launched, and which commands could have faulted.
#pragma once

#include "plan/plan.hpp"
#include "record/argument_store.hpp"

#include <cuda_runtime_api.h>

#include <string>
#include <vector>

namespace cmdgraph::detail {

/// Throws, naming the first command that cannot run on CUDA device `device`: a parallel_for
/// without a device version, a recorded event of another device (waiting for one is fine),
/// memory of another device outside a copy. Opens peer access for copies that reach another device.
void check_runs_on_device(const Plan& plan, const ArgumentStore& args, int device);
/// Throws unless memory `r` can be reached by root command `c` on CUDA device `device`.
void check_device_memory(const Plan& plan, std::uint32_t c, const MemoryRange& r, int device);

/// A kernel or parallel_for ready to launch, its parameters pointing into an ArgumentStore.
struct KernelLaunch {
  const void* function = nullptr;
  dim3 grid, block;
  unsigned shared_bytes = 0;
  std::vector<void*> params;
};
/// The launch of command `c` (a kernel or parallel_for) with the values in `args`.
KernelLaunch kernel_launch(const Plan& plan, std::uint32_t c, const ArgumentStore& args,
                           int device);

/// Names of the commands that run device code (kernels, parallel_for, captures), nested ones
/// qualified: the suspects when a launch faults.
std::vector<std::string> device_code_commands(const Plan& plan);

/// Host tasks in the plan and every nested plan, each counted once per execution.
std::uint32_t count_host_tasks(const Plan& plan);

}  // namespace cmdgraph::detail
