// The checked door's failure path and its fault injection.
#include "cuda/check.hpp"
#include "cuda/fault_injection.hpp"

#include <cmdgraph/error.hpp>

namespace cmdgraph::detail::cuda {

namespace injection {
std::atomic<bool> armed{false};
std::atomic<int> async_failure{0};
namespace {
std::atomic<std::uint64_t> counted{0};
std::atomic<std::uint64_t> fail_at{0};  // 0: never
std::atomic<int> fail_with{cudaSuccess};
}  // namespace

cudaError_t next() {
  const std::uint64_t n = counted.fetch_add(1, std::memory_order_relaxed) + 1;
  return n == fail_at.load(std::memory_order_relaxed)
             ? static_cast<cudaError_t>(fail_with.load(std::memory_order_relaxed))
             : cudaSuccess;
}
}  // namespace injection

void FaultInjection::fail_call(std::uint64_t nth, cudaError_t error) {
  injection::counted = 0;
  injection::fail_with = error;
  injection::fail_at = nth;
  injection::armed = true;
}

void FaultInjection::count_calls() { fail_call(0, cudaSuccess); }

void FaultInjection::disarm() {
  injection::armed = false;
  injection::fail_at = 0;
}

std::uint64_t FaultInjection::calls() { return injection::counted.load(); }

void FaultInjection::fail_next_async_poll(int nccl_status) {
  injection::async_failure = nccl_status;
}

std::string describe(cudaError_t status) {
  return std::string(cudaGetErrorName(status)) + " (" + cudaGetErrorString(status) + ")";
}

void clear_error() noexcept { (void)cudaGetLastError(); }

std::string failure_of(const char* call, Served served, std::vector<std::string>& commands) {
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
  std::string message = failure_of(call, served, commands) + ": " + describe(status);
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
