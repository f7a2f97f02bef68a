// The CUPTI door's failure path and its fault injection.
#include "cuda/cupti_check.hpp"
#include "cuda/fault_injection.hpp"

#include <cmdgraph/error.hpp>

namespace cmdgraph::detail::cuda {

namespace cupti::injection {
std::atomic<bool> armed{false};
namespace {
std::atomic<std::uint64_t> counted{0};
std::atomic<std::uint64_t> fail_at{0};  // 0: never
std::atomic<int> fail_with{CUPTI_SUCCESS};
}  // namespace

CUptiResult next() {
  const std::uint64_t n = counted.fetch_add(1, std::memory_order_relaxed) + 1;
  return n == fail_at.load(std::memory_order_relaxed)
             ? static_cast<CUptiResult>(fail_with.load(std::memory_order_relaxed))
             : CUPTI_SUCCESS;
}
}  // namespace cupti::injection

void CuptiFaultInjection::fail_call(std::uint64_t nth, int result) {
  cupti::injection::counted = 0;
  cupti::injection::fail_with = result;
  cupti::injection::fail_at = nth;
  cupti::injection::armed = true;
}

void CuptiFaultInjection::count_calls() { fail_call(0, CUPTI_SUCCESS); }

void CuptiFaultInjection::disarm() {
  cupti::injection::armed = false;
  cupti::injection::fail_at = 0;
}

std::uint64_t CuptiFaultInjection::calls() { return cupti::injection::counted.load(); }

bool CuptiFaultInjection::available() { return true; }

namespace cupti {

std::string describe(CUptiResult result) {
  const char* name = nullptr;
  const char* message = nullptr;
  if (cuptiGetResultString(result, &name) != CUPTI_SUCCESS || !name) name = "CUPTI_ERROR";
  if (cuptiGetErrorMessage(result, &message) != CUPTI_SUCCESS || !message) {
    return std::string(name) + " (" + std::to_string(static_cast<int>(result)) + ")";
  }
  return std::string(name) + " (" + message + ")";
}

void fail(CUptiResult result, const char* call, Served served) {
  std::string message = std::string(call) + " failed";
  std::vector<std::string> commands;
  if (!served.name.empty()) {
    message += (served.is_command ? " for command '" : " for executable '") +
               std::string(served.name) + "'";
    if (served.is_command) commands.emplace_back(served.name);
  }
  throw Error(errc::cuda_error, message + ": " + describe(result), std::move(commands));
}

}  // namespace cupti
}  // namespace cmdgraph::detail::cuda
