// Device queries and allocation.
#include "cuda/runtime.hpp"

#include "cuda/check.hpp"
#include "cuda/handles.hpp"

#include <algorithm>
#include <mutex>
#include <set>
#include <tuple>

namespace cmdgraph::detail::cuda {

int device_count() noexcept {
  static const int count = [] {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
      (void)cudaGetLastError();
      n = 0;
    }
    return n;
  }();
  return count;
}

DeviceFacts facts(int device) {
  cudaDeviceProp prop{};
  CMDGRAPH_CUDA(no_command, cudaGetDeviceProperties, &prop, device);
  DeviceFacts p;
  p.name = prop.name;
  p.multiprocessors = prop.multiProcessorCount;
  p.compute_major = prop.major;
  p.compute_minor = prop.minor;
  p.total_memory = prop.totalGlobalMem;
  std::tie(p.least_priority, p.greatest_priority) = priority_range(device);
  return p;
}

std::pair<int, int> priority_range(int device) {
  const ScopedDevice on(device);
  int least = 0, greatest = 0;
  CMDGRAPH_CUDA(no_command, cudaDeviceGetStreamPriorityRange, &least, &greatest);
  return {least, greatest};
}

namespace {
// Enabling is per direction: the current device gains access to `peer`'s memory.
void enable_access(int device, int peer, Served served) {
  int possible = 0;
  CMDGRAPH_CUDA(served, cudaDeviceCanAccessPeer, &possible, device, peer);
  if (!possible) return;
  const ScopedDevice on(device);
  const cudaError_t status = try_call([&] { return cudaDeviceEnablePeerAccess(peer, 0); });
  if (status == cudaErrorPeerAccessAlreadyEnabled) {
    clear_error();  // enabled earlier, e.g. by the caller's own code: what we wanted
  } else if (status != cudaSuccess) {
    fail(status, "cudaDeviceEnablePeerAccess", served);
  }
}
}  // namespace

void open_peer_access(int device, int peer, Served served) {
  static std::mutex mutex;
  static std::set<std::pair<int, int>> opened;
  const auto pair = std::minmax(device, peer);
  std::lock_guard lock(mutex);
  if (opened.contains(pair)) return;
  enable_access(device, peer, served);
  enable_access(peer, device, served);
  opened.insert(pair);
}

void* allocate_device(int device, std::size_t bytes) {
  const ScopedDevice on(device);
  void* p = nullptr;
  CMDGRAPH_CUDA(no_command, cudaMalloc, &p, bytes);
  counters::allocation_made(false);
  return p;
}

void* allocate_device_zeroed(int device, std::size_t bytes) {
  void* p = allocate_device(device, bytes);
  try {
    // On a stream of its own, waited for: not the legacy stream, which would wait for whatever
    // the user's code left there, and which no stream of the library's follows.
    const Stream stream = create_stream(device, 0);
    CMDGRAPH_CUDA(no_command, cudaMemsetAsync, p, 0, bytes, stream.get());
    CMDGRAPH_CUDA(no_command, cudaStreamSynchronize, stream.get());
  } catch (...) {
    free_device(device, p);
    throw;
  }
  return p;
}

// Frees are not counted by fault injection, which would skip them and leak what they free;
// like every destruction they report nothing.
void free_device(int device, void* p) noexcept {
  try {
    const ScopedDevice on(device);
    if (cudaFree(p) != cudaSuccess) clear_error();
  } catch (...) {
    // Freeing never throws; a device that cannot be made current has nothing left to free.
  }
  counters::allocation_freed(false);
}

void* allocate_pinned(std::size_t bytes) {
  void* p = nullptr;
  CMDGRAPH_CUDA(no_command, cudaMallocHost, &p, bytes);
  counters::allocation_made(true);
  return p;
}

void free_pinned(void* p) noexcept {
  if (cudaFreeHost(p) != cudaSuccess) clear_error();
  counters::allocation_freed(true);
}

PoolMemory::PoolMemory(int device, std::size_t bytes, Served served)
    : device_(device), bytes_(bytes), stream_(create_stream(device, 0, served)),
      ready_(create_event(device, false, served)) {
  const ScopedDevice on(device);
  CMDGRAPH_CUDA(served, cudaMallocAsync, &data_, bytes, stream_.get());
  counters::allocation_made(false);
  try {
    CMDGRAPH_CUDA(served, cudaEventRecord, ready_.get(), stream_.get());
  } catch (...) {
    if (cudaFreeAsync(data_, stream_.get()) != cudaSuccess) clear_error();
    counters::allocation_freed(false);
    throw;
  }
}

PoolMemory::~PoolMemory() {
  try {
    const ScopedDevice on(device_);
    if (cudaFreeAsync(data_, stream_.get()) != cudaSuccess) clear_error();
  } catch (...) {
    // Freeing never throws; a device that cannot be made current has nothing left to free.
  }
  counters::allocation_freed(false);
}

}  // namespace cmdgraph::detail::cuda
