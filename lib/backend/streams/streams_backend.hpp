// The streams backend: a plan run on several CUDA streams ordered by events. Streams and
// events are made once and reused; each launch forks from the submitting queue's stream,
// enqueues every task on its lane (each kind's stream form comes from cuda_commands; a
// conditional command is a small graph of its own, launched there), and joins back into it,
// without blocking the host.
#pragma once

#include "backend/executable_impl.hpp"
#include "plan/plan.hpp"

#include <memory>

namespace cmdgraph::detail {

std::unique_ptr<ExecutableImpl> lower_to_streams(std::shared_ptr<const Plan> plan, Device device,
                                                 const CompileOptions& options,
                                                 ExecutableStats stats);

}  // namespace cmdgraph::detail
