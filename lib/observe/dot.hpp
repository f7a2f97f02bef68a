// Graphviz DOT of a plan: commands with names and kinds, reduced edges (and optionally the
// removed ones, dashed), lanes as fill colours, the critical path in bold red, and measured
// durations from a profile.
#pragma once

#include "plan/plan.hpp"

#include <cmdgraph/executable.hpp>
#include <cmdgraph/profile.hpp>

#include <string>
#include <vector>

namespace cmdgraph::detail {

/// `lanes`: per root command, its stream or lane (empty when the backend has none);
/// `profile`: null, or timings whose first entries are the root commands.
std::string plan_dot(const Plan& plan, const std::vector<unsigned>& lanes, const Profile* profile,
                     const DotOptions& options);

}  // namespace cmdgraph::detail
