// The rules a command's values must satisfy, shared by recording and update(): each returns
// what is wrong, or an empty string.
#pragma once

#include <cmdgraph/detail/collectives.hpp>
#include <cmdgraph/detail/specs.hpp>

#include <string>

namespace cmdgraph::detail {

std::string problem_with(const LaunchConfig& config);
std::string problem_with(const CopySpec& copy);
std::string problem_with(const FillSpec& fill);
std::string problem_with(const ValueSpec& value);
std::string problem_with(const IndirectSpec& indirect);
/// What is wrong with collective `c` of rank `rank` of `ranks` on CUDA device `device`; when
/// nothing is, narrows its send and recv ranges to the elements the operation touches.
std::string prepare(CollectiveSpec& c, int ranks, int rank, int device);
/// The same for one transfer of an exchange.
std::string prepare(TransferSpec& t, int ranks, int device);

}  // namespace cmdgraph::detail
