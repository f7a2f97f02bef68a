// CUDA stream and event operations through the checked door.
#include "cuda/stream_ops.hpp"

#include "cuda/driver.hpp"

namespace cmdgraph::detail::cuda {

void record_event(cudaEvent_t event, cudaStream_t stream, Served served) {
  CMDGRAPH_CUDA(served, cudaEventRecord, event, stream);
}

void wait_event(cudaStream_t stream, cudaEvent_t event, Served served) {
  CMDGRAPH_CUDA(served, cudaStreamWaitEvent, stream, event, 0u);
}

cudaError_t query_event(cudaEvent_t event) noexcept {
  return try_call([&] { return cudaEventQuery(event); });
}

cudaError_t synchronize_event(cudaEvent_t event) noexcept {
  return try_call([&] { return cudaEventSynchronize(event); });
}

float elapsed_ms(cudaEvent_t start, cudaEvent_t end, Served served) {
  float ms = 0;
  CMDGRAPH_CUDA(served, cudaEventElapsedTime, &ms, start, end);
  return ms;
}

cudaError_t query_stream(cudaStream_t stream) noexcept {
  return try_call([&] { return cudaStreamQuery(stream); });
}

cudaError_t synchronize_stream(cudaStream_t stream) noexcept {
  return try_call([&] { return cudaStreamSynchronize(stream); });
}

void launch_kernel(const void* function, dim3 grid, dim3 block, void** params,
                   std::size_t shared_bytes, cudaStream_t stream, Served served) {
  CMDGRAPH_CUDA(served, cudaLaunchKernel, function, grid, block, params, shared_bytes, stream);
}

void launch_kernel(const void* function, dim3 grid, dim3 block, void** params,
                   std::size_t shared_bytes, cudaStream_t stream, const LaunchAttributes& attributes,
                   Served served) {
  cudaLaunchAttribute attrs[1] = {};
  unsigned count = 0;
  if (attributes.programmatic) {
    attrs[count].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attrs[count++].val.programmaticStreamSerializationAllowed = 1;
  }
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = shared_bytes;
  config.stream = stream;
  config.attrs = attrs;
  config.numAttrs = count;
  CMDGRAPH_CUDA(served, cudaLaunchKernelExC, &config, function, params);
}

void copy_async(void* dst, const void* src, std::size_t bytes, cudaStream_t stream,
                Served served) {
  CMDGRAPH_CUDA(served, cudaMemcpyAsync, dst, src, bytes, cudaMemcpyDefault, stream);
}

void fill_async(void* dst, std::uint32_t value, unsigned element_size, std::size_t count,
                cudaStream_t stream, Served served) {
  if (element_size == 1) {
    CMDGRAPH_CUDA(served, cudaMemsetAsync, dst, static_cast<int>(value), count, stream);
  } else {
    // The runtime has only byte-wise memset on streams.
    memset_async(dst, value, element_size, count, stream, served);
  }
}

void launch_host_func(cudaStream_t stream, cudaHostFn_t fn, void* data, Served served) {
  CMDGRAPH_CUDA(served, cudaLaunchHostFunc, stream, fn, data);
}

int resident_blocks_per_multiprocessor(const void* kernel, int block_threads) {
  int blocks = 0;
  CMDGRAPH_CUDA(no_command, cudaOccupancyMaxActiveBlocksPerMultiprocessor, &blocks, kernel,
                block_threads, std::size_t{0});
  return blocks;
}

int multiprocessor_count(int device) {
  int sms = 0;
  CMDGRAPH_CUDA(no_command, cudaDeviceGetAttribute, &sms, cudaDevAttrMultiProcessorCount, device);
  return sms;
}

}  // namespace cmdgraph::detail::cuda
