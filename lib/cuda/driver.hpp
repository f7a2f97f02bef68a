// Driver calls the runtime lacks, reached through cudaGetDriverEntryPointByVersion so nothing
// links against libcuda: wide memsets on streams, and memory operations on streams and as
// graph nodes.
#pragma once

#include "cuda/check.hpp"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <span>

namespace cmdgraph::detail::cuda {

/// cuMemsetD16Async / cuMemsetD32Async: `count` elements of 2 or 4 bytes.
void memset_async(void* dst, std::uint32_t value, unsigned element_size, std::size_t count,
                  cudaStream_t stream, Served served);

/// True when `device` can wait on and write 64-bit values from a stream.
bool supports_stream_memory_operations(int device);
/// The stream waits until the 64-bit value at `address` is at least `value`.
void stream_wait_at_least(cudaStream_t stream, const std::uint64_t* address, std::uint64_t value,
                          Served served);
/// The stream writes `value` to `address` once the work before it is done (with a fence
/// making that work visible first).
void stream_write(cudaStream_t stream, std::uint64_t* address, std::uint64_t value,
                  Served served);

/// One 32- or 64-bit memory operation (CUDA's stream memory operations): write `value` at
/// `address` once the work before it is done, after a fence that makes that work's writes
/// visible first; or wait until the value at `address` compares with `value` as `wait` says.
/// `address`: device memory, or pinned host memory, aligned to `width`.
struct MemoryOp {
  enum class Wait : unsigned char {
    none,      ///< a write
    at_least,  ///< until (signed)(*address - value) >= 0, CUDA's wrapping comparison
    equal,     ///< until *address == value
    any_bit,   ///< until (*address & value) != 0
  };
  void* address = nullptr;
  std::uint64_t value = 0;
  unsigned width = 4;  ///< 4 or 8 bytes
  Wait wait = Wait::none;
};
/// Enqueues `op` on `stream` (cuStreamBatchMemOp).
void memory_op_async(const MemoryOp& op, cudaStream_t stream, Served served);
/// A node of `graph` doing `op` after `deps`, in the current device's context
/// (cuGraphAddBatchMemOpNode).
cudaGraphNode_t add_memory_op_node(cudaGraph_t graph, std::span<const cudaGraphNode_t> deps,
                                   const MemoryOp& op, Served served);
/// Makes memory operation node `node` of `exec` do `op` from the next launch on.
void set_memory_op_node(cudaGraphExec_t exec, cudaGraphNode_t node, const MemoryOp& op,
                        Served served);

}  // namespace cmdgraph::detail::cuda
