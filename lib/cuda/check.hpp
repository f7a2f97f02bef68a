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
#include <vector>

namespace cmdgraph::detail::cuda {

/// What a CUDA call served: a command (named in the error's commands()), or something larger
/// such as a whole executable's launch (named in the message only).
struct Served {
  std::string_view name;
  bool is_command = true;
  constexpr Served() = default;
  constexpr Served(std::string_view command) : name(command) {}  // NOLINT: a command by default
  constexpr Served(const char* command) : name(command) {}
  Served(const std::string& command) : name(command) {}
};
/// For calls that serve no single command (a device query).
inline constexpr Served no_command{};
/// For calls that serve a whole executable (its launch, its upload).
inline Served for_executable(std::string_view name) {
  Served s(name);
  s.is_command = false;
  return s;
}

/// Throws Error(cuda_error, or out_of_memory) for a failed `status` of `call`, naming what it
/// served.
[[noreturn]] void fail(cudaError_t status, const char* call, Served served);
/// An Error for `status` without throwing it (for errors reported later, e.g. from a fence).
std::exception_ptr make_error(cudaError_t status, const char* call, Served served);

/// "CALL failed for command 'NAME'" (or "for executable 'NAME'", or nothing when it served
/// nothing); adds a command's name to `commands`.
std::string failure_of(const char* call, Served served, std::vector<std::string>& commands);
/// "cudaErrorName (description)" for a status.
std::string describe(cudaError_t status);
/// Clears CUDA's sticky last error after a failure this layer has already reported.
void clear_error() noexcept;

namespace injection {
/// Armed when a test asked for a failure; read on every call, so kept apart and cheap.
extern std::atomic<bool> armed;
/// The error the current call should fail with, or cudaSuccess (counts the call).
cudaError_t next();
/// An ncclResult_t the next poll of NCCL's asynchronous errors reports, or 0.
extern std::atomic<int> async_failure;
}  // namespace injection

/// Runs `f` (a CUDA runtime call) unless fault injection fails it; throws on failure.
template <class F>
void call(const char* name, Served served, F&& f) {
  cudaError_t status = injection::armed.load(std::memory_order_relaxed) ? injection::next()
                                                                         : cudaSuccess;
  if (status == cudaSuccess) status = f();
  if (status != cudaSuccess) fail(status, name, served);
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
