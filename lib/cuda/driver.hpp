// Driver calls the runtime lacks, reached through cudaGetDriverEntryPointByVersion so nothing
// links against libcuda: wide memsets on streams and stream memory operations.
#pragma once

#include "cuda/check.hpp"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

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

}  // namespace cmdgraph::detail::cuda
