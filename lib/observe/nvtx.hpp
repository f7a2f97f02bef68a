// NvtxRange: a named range in Nsight timelines (NVTX3, header-only, from the CUDA toolkit).
// Compiled out when the build has no NVTX (meson option `nvtx`); near free with no tool attached.
#pragma once

#if CMDGRAPH_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

#include <string>

namespace cmdgraph::detail {

class NvtxRange {
 public:
#if CMDGRAPH_NVTX
  explicit NvtxRange(const char* name) noexcept { nvtxRangePushA(name); }
  ~NvtxRange() { nvtxRangePop(); }
#else
  explicit NvtxRange(const char*) noexcept {}
#endif
  explicit NvtxRange(const std::string& name) noexcept : NvtxRange(name.c_str()) {}
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

}  // namespace cmdgraph::detail
