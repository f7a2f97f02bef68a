// The checked door's failure path and its fault injection.
#include "cuda/check.hpp"
#include "cuda/fault_counter.hpp"
#include "cuda/fault_injection.hpp"

#include <cmdgraph/error.hpp>

namespace cmdgraph::detail::cuda {

namespace injection {
std::atomic<bool> armed{false};
std::atomic<int> async_failure{0};
namespace {
FaultCounter& counter() {
  static FaultCounter calls(armed);
  return calls;
}
}  // namespace

cudaError_t next() { return static_cast<cudaError_t>(counter().next()); }
}  // namespace injection

void FaultInjection::fail_call(std::uint64_t nth, cudaError_t error) {
  injection::counter().fail_call(nth, error);
}

void FaultInjection::count_calls() { fail_call(0, cudaSuccess); }

void FaultInjection::disarm() { injection::counter().disarm(); }

std::uint64_t FaultInjection::calls() { return injection::counter().calls(); }

void FaultInjection::fail_next_async_poll(int nccl_status) {
  injection::async_failure = nccl_status;
}

std::string describe(cudaError_t status) {
  return std::string(cudaGetErrorName(status)) + " (" + cudaGetErrorString(status) + ")";
}

void clear_error() noexcept { (void)cudaGetLastError(); }

std::string failed_call(const char* call, Served served, std::vector<std::string>& commands) {
  std::string message = std::string(call) + " failed";
  if (!served.name.empty()) {
    message += (served.is_command ? " for command '" : " for executable '") +
               std::string(served.name) + "'";
    if (served.is_command) commands.emplace_back(served.name);
  }
  return message;
}

namespace {
Error to_error(cudaError_t status, const char* call, Served served) {
  // Clear the sticky last error so later, unrelated calls do not report this one again.
  clear_error();
  std::vector<std::string> commands;
  std::string message = failed_call(call, served, commands) + ": " + describe(status);
  const errc code = status == cudaErrorMemoryAllocation ? errc::out_of_memory : errc::cuda_error;
  return Error(code, message, std::move(commands), static_cast<int>(status));
}
}  // namespace

void fail(cudaError_t status, const char* call, Served served) {
  throw to_error(status, call, served);
}

std::exception_ptr make_error(cudaError_t status, const char* call, Served served) {
  return std::make_exception_ptr(to_error(status, call, served));
}

}  // namespace cmdgraph::detail::cuda
