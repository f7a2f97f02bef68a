// Typed, checked operations on CUDA streams and events: recording and waiting, queries and
// synchronisation, kernel launches, copies, fills and host functions, occupancy. The only code
// that calls CUDA's stream and event API; every call goes through the checked door.
#pragma once

#include "cuda/check.hpp"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace cmdgraph::detail::cuda {

void record_event(cudaEvent_t event, cudaStream_t stream, Served served);
/// Later work on `stream` waits for `event`'s most recent record.
void wait_event(cudaStream_t stream, cudaEvent_t event, Served served);
/// cudaSuccess when the event's work has finished, cudaErrorNotReady while it runs, else the
/// error (a device fault). Never throws.
cudaError_t query_event(cudaEvent_t event) noexcept;
/// Blocks until the event's work has finished; its status, never throws.
cudaError_t synchronize_event(cudaEvent_t event) noexcept;
/// Milliseconds from `start` to `end` (both timed, both finished).
float elapsed_ms(cudaEvent_t start, cudaEvent_t end, Served served);

/// As query_event and synchronize_event, for everything enqueued on `stream`.
cudaError_t query_stream(cudaStream_t stream) noexcept;
cudaError_t synchronize_stream(cudaStream_t stream) noexcept;

void launch_kernel(const void* function, dim3 grid, dim3 block, void** params,
                   std::size_t shared_bytes, cudaStream_t stream, Served served);
/// What a launch asks beyond its dimensions: programmatic stream serialization (the kernel
/// may launch while the one before it on the stream still runs, and waits for it with
/// cudaGridDependencySynchronize()).
struct LaunchAttributes {
  bool programmatic = false;
  bool any() const noexcept { return programmatic; }
};
/// As launch_kernel, with `attributes` (cudaLaunchKernelExC).
void launch_kernel(const void* function, dim3 grid, dim3 block, void** params,
                   std::size_t shared_bytes, cudaStream_t stream, const LaunchAttributes& attributes,
                   Served served);
void copy_async(void* dst, const void* src, std::size_t bytes, cudaStream_t stream, Served served);
/// Sets `count` elements of 1, 2 or 4 bytes at `dst` to `value` (its low bytes).
void fill_async(void* dst, std::uint32_t value, unsigned element_size, std::size_t count,
                cudaStream_t stream, Served served);
/// Runs `fn(data)` on CUDA's host-callback thread once the work before it on `stream` is done.
void launch_host_func(cudaStream_t stream, cudaHostFn_t fn, void* data, Served served);

/// Blocks of `kernel` with `block_threads` threads resident per multiprocessor.
int resident_blocks_per_multiprocessor(const void* kernel, int block_threads);
int multiprocessor_count(int device);

}  // namespace cmdgraph::detail::cuda
