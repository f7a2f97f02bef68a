// Allocation for Buffer and HostBuffer: aligned host memory, or CUDA's allocators.
#include <cmdgraph/error.hpp>
#include <cmdgraph/memory.hpp>

#include <new>

#include <sys/sysinfo.h>

#include "device/host_work.hpp"

#if CMDGRAPH_HAVE_CUDA
#include "cuda/runtime.hpp"
#endif

namespace cmdgraph::detail {
namespace {
// Wide enough for any vector load the host backend's functors might use.
constexpr std::align_val_t host_alignment{64};

// Refuses what the machine could never back. Where the kernel overcommits (vm.overcommit_memory
// = 1, as on many GPU servers) a 32 TiB host allocation "succeeds" and the process is killed
// when it is touched; cudaMallocHost asked for more than the physical memory pins page after
// page first. Pinned memory must fit in RAM, host memory in RAM and swap.
void refuse_beyond_machine(std::size_t bytes, const char* what, bool with_swap) {
  struct sysinfo info {};
  if (::sysinfo(&info) != 0) return;  // nothing known: leave it to the allocator
  const auto unit = static_cast<std::size_t>(info.mem_unit ? info.mem_unit : 1);
  const std::size_t units = static_cast<std::size_t>(info.totalram) +
                            (with_swap ? static_cast<std::size_t>(info.totalswap) : 0);
  if (bytes / unit <= units) return;
  throw Error(errc::out_of_memory,
              "could not allocate " + std::to_string(bytes) + " bytes of " + what +
                  " memory: the machine has " + std::to_string(units * unit) + " bytes of " +
                  (with_swap ? "physical memory and swap" : "physical memory"));
}

void free_host(void* p, int) noexcept { ::operator delete(p, host_alignment); }
#if CMDGRAPH_HAVE_CUDA
void free_pinned(void* p, int) noexcept { cuda::free_pinned(p); }
#endif
}  // namespace

MemorySpace pinned_or_host() noexcept {
  return Device::count() > 0 ? MemorySpace::pinned : MemorySpace::host;
}

void* allocate(MemorySpace space, int device, std::size_t bytes) {
  if (bytes == 0) return nullptr;
  switch (space) {
    case MemorySpace::host: {
      refuse_beyond_machine(bytes, "host", true);
      void* p = ::operator new(bytes, host_alignment, std::nothrow);
      if (!p) {
        throw Error(errc::out_of_memory,
                    "could not allocate " + std::to_string(bytes) + " bytes of host memory");
      }
      return p;
    }
#if CMDGRAPH_HAVE_CUDA
    case MemorySpace::pinned:
      refuse_beyond_machine(bytes, "pinned", false);
      return cuda::allocate_pinned(bytes);
    case MemorySpace::device: return cuda::allocate_device(device, bytes);
#else
    case MemorySpace::pinned:
    case MemorySpace::device: break;
#endif
  }
  (void)device;
  throw Error(errc::no_device, "this build of cmdgraph has no CUDA support");
}

void deallocate(MemorySpace space, int device, void* p) noexcept {
  switch (space) {
    // Host and pinned memory may be in use by the host device's launches: freed once those
    // submitted before have finished, as cudaFree waits for a CUDA device's work.
    case MemorySpace::host:
      if (p) HostWork::release_after_earlier(free_host, p, device);
      return;
#if CMDGRAPH_HAVE_CUDA
    case MemorySpace::pinned:
      if (p) HostWork::release_after_earlier(free_pinned, p, device);
      return;
    case MemorySpace::device: cuda::free_device(device, p); return;
#else
    default: (void)device; return;
#endif
  }
}

}  // namespace cmdgraph::detail
