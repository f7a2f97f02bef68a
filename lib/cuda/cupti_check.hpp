// The door to CUPTI, beside CUDA's (check.hpp): every CUPTI call goes through call() or
// try_call(), which count it so a test can make the Nth one fail, and a failure becomes
// cmdgraph::Error naming the call and what it served. Compiled only where CUPTI was found.
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

/// Runs `f` (a CUPTI call) unless fault injection fails it; throws on failure.
template <class F>
void call(const char* name, Served served, F&& f) {
  CUptiResult result = injection::armed.load(std::memory_order_relaxed) ? injection::next()
                                                                         : CUPTI_SUCCESS;
  if (result == CUPTI_SUCCESS) result = f();
  if (result != CUPTI_SUCCESS) fail(result, name, served);
}

/// As call(), but returns the result instead of throwing (CUPTI's callbacks, which must not
/// throw, and calls whose failure the caller reports later).
template <class F>
CUptiResult try_call(F&& f) {
  const CUptiResult injected =
      injection::armed.load(std::memory_order_relaxed) ? injection::next() : CUPTI_SUCCESS;
  return injected != CUPTI_SUCCESS ? injected : f();
}

}  // namespace cmdgraph::detail::cuda::cupti

/// CMDGRAPH_CUPTI(served, cuptiFoo, args...): call cuptiFoo(args...) through the door.
#define CMDGRAPH_CUPTI(served, fn, ...) \
  ::cmdgraph::detail::cuda::cupti::call(#fn, (served), [&] { return fn(__VA_ARGS__); })
