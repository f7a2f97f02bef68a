// The kernels that change device-updatable kernel nodes as a graph runs: the dispatchers of
// indirect commands, one-thread kernels that read a grid, a count or a flag from device memory
// as the command runs and size, or enable, the command's node from it; and the applier of
// update-free kernels' arguments (lib/cuda/dispatch.cu, compiled with relocatable device code
// and device-linked inside the library, so that users' code needs neither).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace cmdgraph::detail::cuda {

/// How a count dispatcher sizes a parallel_for: at most `max_count` items, `block` threads per
/// block, at most `max_blocks` blocks (a grid-stride loop covers the rest); the count the
/// kernel loops to is its parameter at byte `count_offset`, a std::size_t.
struct CountDispatch {
  unsigned long long max_count;
  unsigned block;
  unsigned max_blocks;
  unsigned long long count_offset;
  unsigned source_width;  // bytes of the count in memory: 4 or 8
  unsigned zero = 0;
};

/// What a dispatcher last set on its node, so that it sets only what changed: a device-side
/// call costs ~0.5 us (tools/probes/indirect_cost.cu), a node keeps what was set on it from
/// run to run, and the count or grid of a loop's indirect command often stays the same. One per
/// dispatcher node, in device memory, zeroed when made: nothing known. The host never changes a
/// node a dispatcher sizes (an update rebuilds such a graph), so the two never disagree.
struct DispatchState {
  unsigned enabled;          // 0: not known, 1: disabled, 2: enabled
  unsigned grid[3];          // as last set; 0 (never a grid's): not known
  unsigned long long count;  // the count parameter as last set; 0 (never set): not known
};

// Each dispatcher reports to two words in memory both the device and the host reach
// (backend/dispatch_reports.hpp lays them out), and only for a run whose source asked for
// more than the command's limit: report[0] counts those runs, report[1] is the most one asked
// for (blocks for a grid, x * y * z; items for a count).

/// The host stub of `__global__ void (cudaGraphDeviceNode_t node, const unsigned* grid, dim3
/// limit, unsigned long long* report, DispatchState* state)`: sets `node`'s grid to grid[0..2]
/// clamped to `limit`, or disables the node when one of them is 0.
const void* grid_dispatcher() noexcept;
/// The host stub of `__global__ void (cudaGraphDeviceNode_t node, const void* count,
/// CountDispatch how, unsigned long long* report, DispatchState* state)`: sets `node`'s grid
/// and count parameter from *count clamped to how.max_count, or disables the node for a count
/// of 0.
const void* count_dispatcher() noexcept;
/// The host stub of `__global__ void (cudaGraphDeviceNode_t node, const unsigned* flag,
/// DispatchState* state)`: enables `node` when *flag is not 0, disables it when it is.
const void* flag_dispatcher() noexcept;

/// One parameter of an update-free kernel in an argument block: its value lies `data_at` bytes
/// from the block's start.
struct ArgumentEntry {
  unsigned data_at;
  unsigned node;    // the kernel's place in its applier's node table
  unsigned offset;  // in the kernel's parameters (cudaFuncGetParamInfo)
  unsigned size;
};

/// An argument block, in pinned memory: this head, then `parameters` ArgumentEntry, then per
/// node the generation its values last changed in (unsigned long long), then the values. It
/// holds every update-free parameter's value as of `generation`.
struct ArgumentBlock {
  unsigned long long generation;
  unsigned parameters;
};

/// The host stub of `__global__ void (const ArgumentBlock* block, const cudaGraphDeviceNode_t*
/// nodes, unsigned long long* applied, unsigned long long* seen)`, launched with one block:
/// unless `block` is null or *applied is its generation already, sets every parameter that
/// changed after *applied on its node (nodes[entry.node]), then writes the block's generation
/// to *applied and to *seen, which the host reads to know which blocks no launch reads any more.
const void* argument_applier() noexcept;

}  // namespace cmdgraph::detail::cuda
