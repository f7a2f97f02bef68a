// TransientRange: placeholders as reserved, inaccessible address space (mmap PROT_NONE), and
// the registry of live ones that tells another buffer's placeholder from an ordinary pointer.
#include "command/transient_range.hpp"

#include <cmdgraph/error.hpp>

#include <atomic>
#include <map>
#include <mutex>
#include <string>

#include <sys/mman.h>
#include <unistd.h>

namespace cmdgraph::detail {
namespace {

struct Entry {
  std::size_t bytes;
  std::uint64_t owner;
};

struct Registry {
  std::mutex mutex;
  std::map<std::uintptr_t, Entry> live;  // by base
  // Every live range lies within [low, high]: most words are told apart without the lock.
  std::atomic<std::uintptr_t> low{UINTPTR_MAX}, high{0};

  void update_bounds() {  // under the mutex
    low = live.empty() ? UINTPTR_MAX : live.begin()->first;
    high = live.empty() ? 0 : live.rbegin()->first + live.rbegin()->second.bytes;
  }
};
// Never destroyed: a range may end during static destruction (a host pool's worker releasing
// the last launch of an executable that allocates), which a registry made after the pool,
// and so destroyed before it, would not survive.
Registry& registry() {
  static Registry& r = *new Registry;
  return r;
}
// How many ranges live: beside the registry, so that the check every recorded command makes
// reads it without the registry's initialisation guard.
constinit std::atomic<std::size_t> live_ranges{0};

std::size_t page_size() {
  static const std::size_t page = [] {
    const long p = ::sysconf(_SC_PAGESIZE);
    return p > 0 ? static_cast<std::size_t>(p) : std::size_t{4096};
  }();
  return page;
}

}  // namespace

TransientRange::TransientRange(std::size_t bytes, std::uint32_t element_size,
                               std::uint64_t owner)
    : bytes_(bytes), element_size_(element_size ? element_size : 1) {
  const std::size_t page = page_size();
  if (bytes > SIZE_MAX - 2 * page) {
    throw Error(errc::out_of_memory, "transient memory of " + std::to_string(bytes) +
                                         " bytes is larger than any address space");
  }
  reserved_ = (bytes + page - 1) / page * page + page;
  // Inaccessible and never committed: UVA device allocations and host allocations are
  // mappings of the same address space, so none can ever land here while it is reserved.
  void* p = ::mmap(nullptr, reserved_, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
  if (p == MAP_FAILED) {
    throw Error(errc::out_of_memory, "could not reserve " + std::to_string(reserved_) +
                                         " bytes of address space for transient memory");
  }
  base_ = reinterpret_cast<std::uintptr_t>(p);
  Registry& r = registry();
  try {
    std::lock_guard lock(r.mutex);
    r.live.emplace(base_, Entry{bytes_, owner});
    r.update_bounds();
  } catch (...) {
    ::munmap(p, reserved_);
    throw;
  }
  live_ranges.fetch_add(1, std::memory_order_release);
}

TransientRange::~TransientRange() {
  Registry& r = registry();
  {
    std::lock_guard lock(r.mutex);
    r.live.erase(base_);
    r.update_bounds();
  }
  live_ranges.fetch_sub(1, std::memory_order_release);
  ::munmap(reinterpret_cast<void*>(base_), reserved_);
}

std::vector<TransientExtent> live_transients() {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  std::vector<TransientExtent> out;
  out.reserve(r.live.size());
  for (const auto& [base, entry] : r.live) out.push_back({base, entry.bytes});
  return out;
}

std::uint64_t transient_owner(std::uintptr_t word) {
  Registry& r = registry();
  if (word < r.low.load(std::memory_order_acquire) ||
      word > r.high.load(std::memory_order_acquire)) {
    return 0;
  }
  std::lock_guard lock(r.mutex);
  auto it = r.live.upper_bound(word);
  if (it == r.live.begin()) return 0;
  --it;
  return word - it->first <= it->second.bytes ? it->second.owner : 0;
}

bool any_live_transients() noexcept {
  return live_ranges.load(std::memory_order_acquire) != 0;
}

const std::atomic<std::size_t>& live_transient_count() noexcept { return live_ranges; }

}  // namespace cmdgraph::detail
