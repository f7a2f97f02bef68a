// The host backend: a plan run on the CPU thread pool, every edge honoured.
#pragma once

#include "plan/plan.hpp"
#include "backend/executable_impl.hpp"

#include <cmdgraph/executable.hpp>

#include <memory>

namespace cmdgraph::detail {

/// Checks that every command can run on the host (naming the first that cannot) and builds
/// the executable.
std::unique_ptr<ExecutableImpl> lower_to_host(std::shared_ptr<const Plan> plan,
                                              const CompileOptions& options, ExecutableStats stats);

}  // namespace cmdgraph::detail
