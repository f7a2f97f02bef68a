// An NVTX tool for the tests: NVTX loads it from NVTX_INJECTION64_PATH at its first call, as it
// would load Nsight Systems, and it records every range pushed and popped with the thread that
// did it, for the test to take back through cmdgraph_test_nvtx_take().
#include <nvtx3/nvToolsExt.h>

#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

std::mutex mutex;
std::vector<std::string> events;  // "<thread> push <name>" or "<thread> pop"

std::string thread_tag() {
  std::ostringstream s;
  s << std::this_thread::get_id();
  return s.str();
}

int NVTX_API push(const char* message) {
  const std::lock_guard lock(mutex);
  events.push_back(thread_tag() + " push " + (message ? message : ""));
  return 0;
}

int NVTX_API pop() {
  const std::lock_guard lock(mutex);
  events.push_back(thread_tag() + " pop");
  return 0;
}

}  // namespace

extern "C" {

/// NVTX's entry point for a tool: takes over the push and pop of the core module.
__attribute__((visibility("default"))) int InitializeInjectionNvtx2(
    NvtxGetExportTableFunc_t export_table) {
  const auto* callbacks =
      static_cast<const NvtxExportTableCallbacks*>(export_table(NVTX_ETID_CALLBACKS));
  NvtxFunctionTable table = nullptr;
  unsigned size = 0;
  if (!callbacks || !callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &table, &size) ||
      size <= NVTX_CBID_CORE_RangePop) {
    return 0;
  }
  *table[NVTX_CBID_CORE_RangePushA] = reinterpret_cast<NvtxFunctionPointer>(&push);
  *table[NVTX_CBID_CORE_RangePop] = reinterpret_cast<NvtxFunctionPointer>(&pop);
  return 1;
}

/// Moves what was recorded so far into `out`.
__attribute__((visibility("default"))) void cmdgraph_test_nvtx_take(
    std::vector<std::string>* out) {
  const std::lock_guard lock(mutex);
  *out = std::move(events);
  events.clear();
}

}  // extern "C"
