// Test-only control of the checked doors: make the Nth CUDA, CUPTI or NCCL call from now fail
// with a chosen error, count calls, or have NCCL report a failed peer, so every error path can be
// exercised without broken hardware.
#pragma once

#include "cuda/fault_counter.hpp"

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
  /// The next poll of NCCL's asynchronous errors (of any communicator) reports `nccl_status`
  /// (an ncclResult_t), as when a peer failed; later polls see NCCL's own answer again.
  static void fail_next_async_poll(int nccl_status);
};

/// The same for CUPTI's door (cupti_check.hpp), counted apart from CUDA's calls:
/// counter().fail_call(nth, a CUptiResult), disarm(), calls(). Calls CUPTI's own thread makes
/// while it hands buffers over are not counted, so the count is the calling threads' alone.
struct CuptiFaultInjection {
  /// The CUPTI door's counter (one nothing reads in a build without CUPTI).
  static FaultCounter& counter();
  /// Whether this build has CUPTI at all.
  static bool available();
};

}  // namespace cmdgraph::detail::cuda
