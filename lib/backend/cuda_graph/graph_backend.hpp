// The CUDA graph backend: a plan instantiated once as a cudaGraphExec_t; each launch is one
// cudaGraphLaunch on the queue's stream.
#pragma once

#include "plan/plan.hpp"
#include "backend/executable_impl.hpp"

#include <memory>

namespace cmdgraph::detail {

std::unique_ptr<ExecutableImpl> lower_to_cuda_graph(std::shared_ptr<const Plan> plan,
                                                    Device device, const CompileOptions& options,
                                                    ExecutableStats stats);

}  // namespace cmdgraph::detail
