// Test-only control of the checked door: make the Nth CUDA call from now fail with a chosen
// error, and count calls, so every error path can be exercised without broken hardware.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace cmdgraph::detail::cuda {

class FaultInjection {
 public:
  /// The `nth` call (1-based) from now fails with `error`; earlier and later calls run.
  static void fail_call(std::uint64_t nth, cudaError_t error);
  /// Counts calls without failing any.
  static void count_calls();
  /// Stops counting and failing.
  static void disarm();
  /// Calls counted since the last fail_call or count_calls.
  static std::uint64_t calls();
};

}  // namespace cmdgraph::detail::cuda
