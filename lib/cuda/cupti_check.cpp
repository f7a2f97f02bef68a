// The CUPTI door's failure path and its fault injection.
#include "cuda/cupti_check.hpp"
#include "cuda/cupti_session.hpp"
#include "cuda/fault_injection.hpp"
#include "cuda/loaded_library.hpp"
#include "library_paths.hpp"

#include <cmdgraph/error.hpp>

namespace cmdgraph::detail::cuda {

namespace cupti::injection {
std::atomic<bool> armed{false};
CUptiResult next() { return static_cast<CUptiResult>(CuptiFaultInjection::counter().next()); }
}  // namespace cupti::injection

FaultCounter& CuptiFaultInjection::counter() {
  static FaultCounter calls(cupti::injection::armed);
  return calls;
}

bool CuptiFaultInjection::available() { return true; }

namespace cupti {

const Functions& loaded() {
  static constexpr std::string_view candidates[] = {CMDGRAPH_CUPTI_CANDIDATES};
  return loaded_once<Functions>("CUPTI (libcupti)", candidates, "CMDGRAPH_CUPTI_LIBRARY",
                                [](const LoadedLibrary& library, Functions& f) {
                                  CMDGRAPH_CUPTI_FUNCTIONS(CMDGRAPH_RESOLVE_FUNCTION)
                                });
}

std::string describe(CUptiResult result) {
  const char* name = nullptr;
  const char* message = nullptr;
  const Functions& cupti = loaded();
  if (cupti.cuptiGetResultString(result, &name) != CUPTI_SUCCESS || !name) name = "CUPTI_ERROR";
  if (cupti.cuptiGetErrorMessage(result, &message) != CUPTI_SUCCESS || !message) {
    return std::string(name) + " (" + std::to_string(static_cast<int>(result)) + ")";
  }
  return std::string(name) + " (" + message + ")";
}

void fail(CUptiResult result, const char* call, Served served) {
  std::vector<std::string> commands;
  const std::string message = failed_call(call, served, commands) + ": " + describe(result);
  throw Refused(errc::cuda_error, message, std::move(commands));
}

}  // namespace cupti
}  // namespace cmdgraph::detail::cuda
