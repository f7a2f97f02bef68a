// The dispatchers of indirect commands (dispatch.hpp). The device-side graph calls need
// relocatable device code and the device runtime: this file is compiled with -rdc and
// device-linked inside the library (lib/meson.build).
#include "cuda/dispatch.hpp"

namespace cmdgraph::detail::cuda {
namespace {

__device__ void note(unsigned long long* report, unsigned long long asked, bool clamped) {
  if (clamped) ++report[0];
  if (asked > report[1]) report[1] = asked;
  __threadfence_system();  // the host reads the report from pinned memory after its wait
}

// Runs the node with `grid`, or not at all when it has no block. Enabling again every run:
// a node disabled by an earlier run stays disabled until told otherwise.
__device__ void size_node(cudaGraphDeviceNode_t node, dim3 grid) {
  const bool any = grid.x != 0 && grid.y != 0 && grid.z != 0;
  cudaGraphKernelNodeSetEnabled(node, any);
  if (any) cudaGraphKernelNodeSetGridDim(node, grid);
}

__global__ void dispatch_grid(cudaGraphDeviceNode_t node, const unsigned* source, dim3 limit,
                              unsigned long long* report) {
  const dim3 asked(source[0], source[1], source[2]);
  const dim3 grid(min(asked.x, limit.x), min(asked.y, limit.y), min(asked.z, limit.z));
  note(report,
       static_cast<unsigned long long>(asked.x) * asked.y * asked.z,
       grid.x != asked.x || grid.y != asked.y || grid.z != asked.z);
  size_node(node, grid);
}

__global__ void dispatch_count(cudaGraphDeviceNode_t node, const void* source, CountDispatch how,
                               unsigned long long* report) {
  const unsigned long long asked = how.source_width == 8
                                       ? *static_cast<const unsigned long long*>(source)
                                       : *static_cast<const unsigned*>(source);
  const unsigned long long count = min(asked, how.max_count);
  note(report, asked, count != asked);
  const unsigned long long needed = (count + how.block - 1) / how.block;
  size_node(node, dim3(static_cast<unsigned>(min(needed, static_cast<unsigned long long>(
                                                          how.max_blocks)))));
  if (count != 0) {
    const std::size_t items = count;
    cudaGraphKernelNodeSetParam(node, how.count_offset, &items, sizeof items);
  }
}

}  // namespace

const void* grid_dispatcher() noexcept { return reinterpret_cast<const void*>(&dispatch_grid); }
const void* count_dispatcher() noexcept { return reinterpret_cast<const void*>(&dispatch_count); }

}  // namespace cmdgraph::detail::cuda
