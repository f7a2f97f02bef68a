// The door to CUPTI, beside CUDA's (check.hpp): every CUPTI call goes through CuptiDoor, which
// counts it so a test can make the Nth one fail, and a failure becomes cmdgraph::Error naming
// the call and what it served. Compiled only where CUPTI was found.
#pragma once

#include "cuda/check.hpp"

#include <cupti.h>

#include <atomic>
#include <string>

namespace cmdgraph::detail::cuda::cupti {

/// "CUPTI_ERROR_NAME (description)" for a result; calls CUPTI directly (never counted).
std::string describe(CUptiResult result);
/// Throws Error(cuda_error) for a failed `result` of `call`, naming what it served.
[[noreturn]] void fail(CUptiResult result, const char* call, Served served);

namespace injection {
/// Armed when a test asked for a failure (CuptiFaultInjection); read on every call.
extern std::atomic<bool> armed;
/// The result the current call should fail with, or CUPTI_SUCCESS (counts the call).
CUptiResult next();
}  // namespace injection

/// CUPTI's door: call() throws on a failed call, try_call() returns the result (for CUPTI's
/// callbacks, which must not throw, and calls whose failure the caller reports later).
using CuptiDoor = Door<CUptiResult, injection::armed, &injection::next, &fail>;

}  // namespace cmdgraph::detail::cuda::cupti

/// CMDGRAPH_CUPTI(served, cuptiFoo, args...): call cuptiFoo(args...) through the door.
#define CMDGRAPH_CUPTI(served, fn, ...) \
  ::cmdgraph::detail::cuda::cupti::CuptiDoor::call(#fn, (served), [&] { return fn(__VA_ARGS__); })
