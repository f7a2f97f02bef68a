// What CUDA devices refuse whatever the device: the structure of conditional bodies and
// executed buffers, and memory a GPU's memory operation cannot reach. Both CUDA backends check
// them, and so does the host backend unless CompileOptions::portable is false, so a program
// tested on a CPU machine compiles on a GPU one.
#pragma once

#include "plan/plan.hpp"

#include <optional>
#include <string>

namespace cmdgraph::detail {

/// A command CUDA devices refuse and why, as errors name it (command_label).
struct CudaRuleBreach {
  std::string command;
  std::string why;
};

/// The first command of `plan` (the bodies it runs included) that CUDA devices refuse for where
/// it sits: in the body of a conditional command (a conditional node's body graph holds only
/// kernels, parallel_for, copies, fills, executed buffers and conditional commands), or a
/// conditional command inside an executed buffer (CUDA cannot clone a conditional node).
std::optional<CudaRuleBreach> cuda_structure_breach(const Plan& plan);

/// The first command of `plan` (the bodies it runs included) that a graph launched from the
/// device cannot hold (CompileOptions::device_launch): one that a conditional body cannot hold
/// either (host tasks, events, captures, collectives, transient memory, value writes and
/// waits), a barrier or a conditional command. CUDA's device graphs hold kernel, memcpy,
/// memset and child graph nodes: the H100 refused empty and conditional nodes, and ran
/// device-updatable kernel nodes (tests/cuda/test_cuda_device_launch.cu).
std::optional<CudaRuleBreach> device_graph_breach(const Plan& plan);

/// Why a GPU cannot reach `r` as a value of a command of `kind` (a memory operation's target
/// in pageable host memory); empty when it can.
std::string cuda_memory_breach(CommandKind kind, const MemoryRange& r);

}  // namespace cmdgraph::detail
