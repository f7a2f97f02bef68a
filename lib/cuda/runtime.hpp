// Device queries and memory through the checked door.
#pragma once

#include "cuda/check.hpp"
#include "cuda/handles.hpp"

#include <cstddef>
#include <string>
#include <utility>

namespace cmdgraph::detail::cuda {

/// Devices the driver reports; 0 when there is no driver or device (the error is cleared).
int device_count() noexcept;
/// What Device::properties() reports of a CUDA device.
struct DeviceFacts {
  std::string name;
  int multiprocessors = 0, compute_major = 0, compute_minor = 0;
  std::size_t total_memory = 0;
  int least_priority = 0, greatest_priority = 0;
};
DeviceFacts facts(int device);
/// The device's stream priority range: least urgent, most urgent.
std::pair<int, int> priority_range(int device);

/// Lets `device` and `peer` reach each other's memory directly (NVLink or PCIe) where the
/// hardware can, once per pair and process. Copies between them work either way (CUDA stages
/// them through host memory otherwise), only slower. Throws for a device that does not exist.
void open_peer_access(int device, int peer, Served served);

void* allocate_device(int device, std::size_t bytes);
/// As allocate_device, every byte 0 before it returns.
void* allocate_device_zeroed(int device, std::size_t bytes);
void free_device(int device, void* p) noexcept;
void* allocate_pinned(std::size_t bytes);
void free_pinned(void* p) noexcept;

/// `bytes` bytes of `device`'s memory from its default memory pool (cudaMallocAsync), the
/// allocation enqueued on a stream of its own so that making one never waits for the device;
/// work using the memory first waits for ready(). Freed (cudaFreeAsync, on that stream) when
/// destroyed, which the owner does only once no work uses it. Never throws when destroyed.
class PoolMemory {
 public:
  PoolMemory(int device, std::size_t bytes, Served served);
  ~PoolMemory();
  PoolMemory(const PoolMemory&) = delete;
  PoolMemory& operator=(const PoolMemory&) = delete;

  void* get() const noexcept { return data_; }
  std::size_t bytes() const noexcept { return bytes_; }
  /// Recorded once the allocation is usable.
  cudaEvent_t ready() const noexcept { return ready_.get(); }

 private:
  int device_;
  std::size_t bytes_;
  Stream stream_;
  Event ready_;
  void* data_ = nullptr;
};

}  // namespace cmdgraph::detail::cuda
