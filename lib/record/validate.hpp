// The rules a command's values must satisfy, shared by recording and update(): each returns
// what is wrong, or an empty string.
#pragma once

#include <cmdgraph/detail/specs.hpp>

#include <string>

namespace cmdgraph::detail {

std::string problem_with(const LaunchConfig& config);
std::string problem_with(const CopySpec& copy);
std::string problem_with(const FillSpec& fill);

}  // namespace cmdgraph::detail
