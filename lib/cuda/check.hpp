// The one door to the CUDA runtime: every call goes through call(), which counts it (so a
// test can make the Nth call fail), clears CUDA's sticky last error on failure, and throws
// cmdgraph::Error naming the call and the command it served.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <exception>

namespace cmdgraph::detail::cuda {

/// For calls that serve no single command (a whole launch, a device query).
inline constexpr std::string_view no_command{};

/// Throws Error(cuda_error, or out_of_memory) for a failed `status` of `call`, serving
/// `command` (empty when it served no single command, e.g. a launch of the whole graph).
[[noreturn]] void fail(cudaError_t status, const char* call, std::string_view command);
/// An Error for `status` without throwing it (for errors reported later, e.g. from a fence).
std::exception_ptr make_error(cudaError_t status, const char* call, std::string_view command);

/// "cudaErrorName (description)" for a status.
std::string describe(cudaError_t status);
/// Clears CUDA's sticky last error after a failure this layer has already reported.
void clear_error() noexcept;

namespace injection {
/// Armed when a test asked for a failure; read on every call, so kept apart and cheap.
extern std::atomic<bool> armed;
/// The error the current call should fail with, or cudaSuccess (counts the call).
cudaError_t next();
}  // namespace injection

/// Runs `f` (a CUDA runtime call) unless fault injection fails it; throws on failure.
template <class F>
void call(const char* name, std::string_view command, F&& f) {
  cudaError_t status = injection::armed.load(std::memory_order_relaxed) ? injection::next()
                                                                         : cudaSuccess;
  if (status == cudaSuccess) status = f();
  if (status != cudaSuccess) fail(status, name, command);
}

/// As call(), but returns the status instead of throwing (for polls such as cudaEventQuery).
template <class F>
cudaError_t try_call(F&& f) {
  const cudaError_t injected =
      injection::armed.load(std::memory_order_relaxed) ? injection::next() : cudaSuccess;
  return injected != cudaSuccess ? injected : f();
}

}  // namespace cmdgraph::detail::cuda

/// CMDGRAPH_CUDA(command, cudaFoo, args...): call cudaFoo(args...) through the checked door.
#define CMDGRAPH_CUDA(command, fn, ...) \
  ::cmdgraph::detail::cuda::call(#fn, (command), [&] { return fn(__VA_ARGS__); })
