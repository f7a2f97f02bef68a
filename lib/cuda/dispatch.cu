// The dispatchers of indirect commands and the argument applier (dispatch.hpp). The device-side
// graph calls need relocatable device code and the device runtime: this file is compiled with
// -rdc and device-linked inside the library (lib/meson.build).
#include "cuda/dispatch.hpp"

namespace cmdgraph::detail::cuda {
namespace {

// Counts a run that asked for more than the command's limit. A run within it touches no
// report: reports lie in host memory, a trip over the bus for the device, and every run that
// asks more than the limit is clamped, so the most a clamped run asked is the most any run
// asked. No fence: the host reads reports after waiting for the launch, which ends with every
// write of its kernels visible.
__device__ void note_clamped(unsigned long long* report, unsigned long long asked) {
  ++report[0];
  if (asked > report[1]) report[1] = asked;
}

// Each dispatcher reads what it set last (`was`) as it starts, a load that waits on nothing the
// source's does not, and sets only what differs from it, noting what it set in `now`.

// Enables or disables the node unless it is so already.
__device__ void set_enabled(cudaGraphDeviceNode_t node, bool enabled, const DispatchState& was,
                            DispatchState& now) {
  now.enabled = enabled ? 2 : 1;
  if (now.enabled != was.enabled) cudaGraphKernelNodeSetEnabled(node, enabled);
}

// Runs the node with `grid`, or not at all when it has no block. A disabled node keeps its grid
// for when it is enabled again.
__device__ void size_node(cudaGraphDeviceNode_t node, dim3 grid, const DispatchState& was,
                          DispatchState& now) {
  const bool any = grid.x != 0 && grid.y != 0 && grid.z != 0;
  set_enabled(node, any, was, now);
  if (!any || (grid.x == was.grid[0] && grid.y == was.grid[1] && grid.z == was.grid[2])) return;
  cudaGraphKernelNodeSetGridDim(node, grid);
  now.grid[0] = grid.x;
  now.grid[1] = grid.y;
  now.grid[2] = grid.z;
}

__global__ void dispatch_grid(cudaGraphDeviceNode_t node, const unsigned* source, dim3 limit,
                              unsigned long long* report, DispatchState* state) {
  const DispatchState was = *state;
  DispatchState now = was;
  const dim3 asked(source[0], source[1], source[2]);
  const dim3 grid(min(asked.x, limit.x), min(asked.y, limit.y), min(asked.z, limit.z));
  if (grid.x != asked.x || grid.y != asked.y || grid.z != asked.z) {
    note_clamped(report, static_cast<unsigned long long>(asked.x) * asked.y * asked.z);
  }
  size_node(node, grid, was, now);
  *state = now;
}

__global__ void dispatch_count(cudaGraphDeviceNode_t node, const void* source, CountDispatch how,
                               unsigned long long* report, DispatchState* state) {
  const DispatchState was = *state;
  DispatchState now = was;
  const unsigned long long asked = how.source_width == 8
                                       ? *static_cast<const unsigned long long*>(source)
                                       : *static_cast<const unsigned*>(source);
  const unsigned long long count = min(asked, how.max_count);
  if (count != asked) note_clamped(report, asked);
  const unsigned long long needed = (count + how.block - 1) / how.block;
  const auto blocks = static_cast<unsigned>(min(needed, static_cast<unsigned long long>(
                                                            how.max_blocks)));
  size_node(node, dim3(blocks), was, now);
  if (count != 0 && count != was.count) {
    const std::size_t items = count;
    cudaGraphKernelNodeSetParam(node, how.count_offset, &items, sizeof items);
    now.count = count;
  }
  *state = now;
}

__global__ void dispatch_flag(cudaGraphDeviceNode_t node, const unsigned* flag,
                              DispatchState* state) {
  const DispatchState was = *state;
  DispatchState now = was;
  set_enabled(node, *flag != 0, was, now);
  *state = now;
}

__global__ void apply_arguments(const ArgumentBlock* block, const cudaGraphDeviceNode_t* nodes,
                                unsigned long long* applied, unsigned long long* seen) {
  if (block == nullptr) return;
  const unsigned long long since = *applied;
  const unsigned long long generation = block->generation;
  if (generation == since) return;  // every launch after the first of a block: nothing to do
  const auto* entries = reinterpret_cast<const ArgumentEntry*>(block + 1);
  const auto* changed_at = reinterpret_cast<const unsigned long long*>(entries + block->parameters);
  const auto* bytes = reinterpret_cast<const unsigned char*>(block);
  for (unsigned i = threadIdx.x; i < block->parameters; i += blockDim.x) {
    const ArgumentEntry e = entries[i];
    if (changed_at[e.node] > since) {
      cudaGraphKernelNodeSetParam(nodes[e.node], e.offset, bytes + e.data_at, e.size);
    }
  }
  __syncthreads();  // every read of the block done before the host may take it back
  if (threadIdx.x == 0) {
    *applied = generation;
    *static_cast<volatile unsigned long long*>(seen) = generation;
  }
}

}  // namespace

const void* argument_applier() noexcept {
  return reinterpret_cast<const void*>(&apply_arguments);
}
const void* flag_dispatcher() noexcept { return reinterpret_cast<const void*>(&dispatch_flag); }
const void* grid_dispatcher() noexcept { return reinterpret_cast<const void*>(&dispatch_grid); }
const void* count_dispatcher() noexcept { return reinterpret_cast<const void*>(&dispatch_count); }

}  // namespace cmdgraph::detail::cuda
