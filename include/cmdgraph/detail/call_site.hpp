// LaunchAt: a kernel's LaunchConfig with the place of the record call it was passed to, so
// that launch() and launch_indirect(), whose arguments come last, can still say where a
// refused command was recorded.
#pragma once

#include <cmdgraph/launch_config.hpp>

#include <cstddef>
#include <source_location>

namespace cmdgraph::detail {

/// Converts implicitly from a LaunchConfig, from a braced grid, block and dynamic shared memory
/// (`{{blocks}, {threads}}`) or from `{}` (one block of one thread, as LaunchConfig{}); the
/// conversion is made at the call, so `where` is the user's call.
struct LaunchAt {
  LaunchConfig config;
  std::source_location where;
  LaunchAt(std::source_location w = std::source_location::current()) noexcept : where(w) {}
  LaunchAt(const LaunchConfig& c,
           std::source_location w = std::source_location::current()) noexcept
      : config(c), where(w) {}
  LaunchAt(Dim3 grid, Dim3 block, std::size_t shared_bytes = 0,
           std::source_location w = std::source_location::current()) noexcept
      : config{grid, block, shared_bytes}, where(w) {}
};

}  // namespace cmdgraph::detail
