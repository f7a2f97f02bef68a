// Allocation for Buffer and HostBuffer: aligned host memory, or CUDA's allocators.
#include <cmdgraph/error.hpp>
#include <cmdgraph/memory.hpp>

#include <new>

#include <unistd.h>

#if CMDGRAPH_HAVE_CUDA
#include "cuda/runtime.hpp"
#endif

namespace cmdgraph::detail {
namespace {
// Wide enough for any vector load the host backend's functors might use.
constexpr std::align_val_t host_alignment{64};

#if CMDGRAPH_HAVE_CUDA
// Page-locked memory is physical memory: asking CUDA for more than the machine has can pin
// page after page until the kernel's OOM killer ends the process, instead of failing.
void* allocate_pinned_checked(std::size_t bytes) {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0 &&
      bytes / static_cast<std::size_t>(page) >= static_cast<std::size_t>(pages)) {
    throw Error(errc::out_of_memory,
                "could not allocate " + std::to_string(bytes) +
                    " bytes of pinned memory: the machine has " +
                    std::to_string(static_cast<std::size_t>(pages) *
                                   static_cast<std::size_t>(page)) +
                    " bytes of physical memory");
  }
  return cuda::allocate_pinned(bytes);
}
#endif
}  // namespace

MemorySpace pinned_or_host() noexcept {
  return Device::count() > 0 ? MemorySpace::pinned : MemorySpace::host;
}

void* allocate(MemorySpace space, int device, std::size_t bytes) {
  if (bytes == 0) return nullptr;
  switch (space) {
    case MemorySpace::host: {
      void* p = ::operator new(bytes, host_alignment, std::nothrow);
      if (!p) {
        throw Error(errc::out_of_memory,
                    "could not allocate " + std::to_string(bytes) + " bytes of host memory");
      }
      return p;
    }
#if CMDGRAPH_HAVE_CUDA
    case MemorySpace::pinned: return allocate_pinned_checked(bytes);
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
    case MemorySpace::host: ::operator delete(p, host_alignment); return;
#if CMDGRAPH_HAVE_CUDA
    case MemorySpace::pinned: cuda::free_pinned(p); return;
    case MemorySpace::device: cuda::free_device(device, p); return;
#else
    default: (void)device; return;
#endif
  }
}

}  // namespace cmdgraph::detail
