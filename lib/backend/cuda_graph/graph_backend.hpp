// The CUDA graph backend: a plan instantiated once as a cudaGraphExec_t; each launch is one
// cudaGraphLaunch on the queue's stream.
#pragma once

#include "backend/cuda_graph/graph_builder.hpp"
#include "backend/executable_impl.hpp"
#include "plan/plan.hpp"

#include <memory>

namespace cmdgraph::detail {

/// Lowers `plan`, whose capture commands ran into `captures` (see capture_all, which must not
/// have refused), to an instantiated graph with its upload started.
std::unique_ptr<ExecutableImpl> lower_to_cuda_graph(std::shared_ptr<const Plan> plan,
                                                    Device device, const CompileOptions& options,
                                                    ExecutableStats stats, Captures captures);

}  // namespace cmdgraph::detail
