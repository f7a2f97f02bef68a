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

/// "`call` failed for command 'x'" (or "for executable 'x'", or nothing served), putting the
/// command's name into `commands` when a command is served: how every door's errors begin.
std::string failed_call(const char* call, Served served, std::vector<std::string>& commands);
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

/// A checked door over calls returning `R` (`R{}` is success): its fault injection (`armed`,
/// then `next`) and its failure path (`fail_with`). CUDA's is below, CUPTI's in cupti_check.hpp.
template <class R, std::atomic<bool>& armed, R (*next)(),
          void (*fail_with)(R, const char*, Served)>
struct Door {
  /// Runs `f` (a call returning R) unless fault injection fails it; throws on failure.
  template <class F>
  static void call(const char* name, Served served, F&& f) {
    const R result = try_call(f);
    if (result != R{}) fail_with(result, name, served);
  }
  /// As call(), but returns the result instead of throwing.
  template <class F>
  static R try_call(F&& f) {
    const R injected = armed.load(std::memory_order_relaxed) ? next() : R{};
    return injected != R{} ? injected : f();
  }
};
using CudaDoor = Door<cudaError_t, injection::armed, &injection::next, &fail>;

/// Runs `f` (a CUDA runtime call) unless fault injection fails it; throws on failure.
template <class F>
void call(const char* name, Served served, F&& f) {
  CudaDoor::call(name, served, f);
}

/// As call(), but returns the status instead of throwing (for polls such as cudaEventQuery).
template <class F>
cudaError_t try_call(F&& f) {
  return CudaDoor::try_call(f);
}

}  // namespace cmdgraph::detail::cuda

/// CMDGRAPH_CUDA(command, cudaFoo, args...): call cudaFoo(args...) through the checked door.
#define CMDGRAPH_CUDA(command, fn, ...) \
  ::cmdgraph::detail::cuda::call(#fn, (command), [&] { return fn(__VA_ARGS__); })
