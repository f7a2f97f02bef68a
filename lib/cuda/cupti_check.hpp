// The door to CUPTI, beside CUDA's (check.hpp): every CUPTI call goes through CuptiDoor, which
// counts it so a test can make the Nth one fail, and a failure becomes cmdgraph::Error naming
// the call and what it served. CUPTI's functions come from libcupti, loaded when the first
// session starts (loaded_library.hpp): only programs that profile with CUPTI need it. Compiled
// only where cupti.h was found.
#pragma once

#include "cuda/check.hpp"

#include <cupti.h>

#include <atomic>
#include <string>

namespace cmdgraph::detail::cuda::cupti {

/// The CUPTI functions cmdgraph calls.
#define CMDGRAPH_CUPTI_FUNCTIONS(X)                                                        \
  X(cuptiActivityDisable) X(cuptiActivityEnable) X(cuptiActivityFlushAll)                   \
  X(cuptiActivityGetNextRecord) X(cuptiActivityGetNumDroppedRecords)                        \
  X(cuptiActivityRegisterCallbacks) X(cuptiEnableCallback) X(cuptiGetErrorMessage)          \
  X(cuptiGetGraphNodeId) X(cuptiGetResultString) X(cuptiGetTimestamp) X(cuptiSubscribe_v2) \
  X(cuptiUnsubscribe)

/// CUPTI's functions, each member named as the function it points to.
struct Functions {
#define CMDGRAPH_CUPTI_MEMBER(f) decltype(&::f) f = nullptr;
  CMDGRAPH_CUPTI_FUNCTIONS(CMDGRAPH_CUPTI_MEMBER)
#undef CMDGRAPH_CUPTI_MEMBER
};
/// The loaded libcupti's functions; loads it on the first call (thread-safe). Throws
/// Error(unsupported) saying where it looked when it cannot (CMDGRAPH_CUPTI_LIBRARY chooses).
const Functions& loaded();

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
#define CMDGRAPH_CUPTI(served, fn, ...)                         \
  ::cmdgraph::detail::cuda::cupti::CuptiDoor::call(#fn, (served), [&] { \
    return ::cmdgraph::detail::cuda::cupti::loaded().fn(__VA_ARGS__);   \
  })
