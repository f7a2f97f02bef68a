// The dispatchers of indirect commands: one-thread kernels that read a grid, a count or a flag
// from device memory as the command runs and size, or enable, the command's device-updatable
// kernel node from it (lib/cuda/dispatch.cu, compiled with relocatable device code and
// device-linked inside the library, so that users' code needs neither).
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

// Each dispatcher reports to two words in memory both the device and the host reach
// (backend/dispatch_reports.hpp lays them out), and only for a run whose source asked for
// more than the command's limit: report[0] counts those runs, report[1] is the most one asked
// for (blocks for a grid, x * y * z; items for a count).

/// The host stub of `__global__ void (cudaGraphDeviceNode_t node, const unsigned* grid, dim3
/// limit, unsigned long long* report)`: sets `node`'s grid to grid[0..2] clamped to `limit`,
/// or disables the node when one of them is 0.
const void* grid_dispatcher() noexcept;
/// The host stub of `__global__ void (cudaGraphDeviceNode_t node, const void* count,
/// CountDispatch how, unsigned long long* report)`: sets `node`'s grid and count parameter
/// from *count clamped to how.max_count, or disables the node for a count of 0.
const void* count_dispatcher() noexcept;
/// The host stub of `__global__ void (cudaGraphDeviceNode_t node, const unsigned* flag)`:
/// enables `node` when *flag is not 0, disables it when it is.
const void* flag_dispatcher() noexcept;

}  // namespace cmdgraph::detail::cuda
