// ExecutableCache: kept executables in recency order, found by structure hash, device and
// options; leased one user at a time; trimmed to the limits, least recently used first.
#include <cmdgraph/executable_cache.hpp>

#include "backend/executable_impl.hpp"
#include "plan/structure_hash.hpp"
#include "record/recording.hpp"

#include <cmdgraph/command_buffer.hpp>
#include <cmdgraph/error.hpp>

#include <algorithm>
#include <list>
#include <mutex>
#include <utility>

namespace cmdgraph {
namespace detail {

struct CacheEntry {
  std::uint64_t hash;
  Device device;
  CompileOptions options;
  Executable executable;
  // What stats() reports of it, taken when it was compiled: a leased executable may be
  // updating while another thread reads the cache's stats.
  std::string name;
  Backend backend;
  std::size_t bytes;  // ExecutableStats::transient_bytes
  std::size_t hits = 0;
  bool in_use = false;
};

struct CacheState {
  explicit CacheState(const CacheLimits& limits) : limits(limits) {}

  const CacheLimits limits;
  std::uint64_t (*hash)(const Recording&) = structure_hash;
  mutable std::mutex mutex;
  std::list<CacheEntry> entries;  // most recently used first; leased entries stay in place
  CacheStats counts;              // hits, misses, evictions, collisions and device_bytes
  bool open = true;               // false once the cache is gone: entries given back are dropped

  // Leases the most recently used free entry for (hash, device, options) not in `tried`,
  // moving it to the front; null when there is none.
  CacheEntry* lease(std::uint64_t h, const Device& device, const CompileOptions& options,
                    const std::vector<const CacheEntry*>& tried) {
    const std::lock_guard lock(mutex);
    for (auto it = entries.begin(); it != entries.end(); ++it) {
      if (it->in_use || it->hash != h || it->device != device || !(it->options == options) ||
          std::find(tried.begin(), tried.end(), &*it) != tried.end()) {
        continue;
      }
      it->in_use = true;
      entries.splice(entries.begin(), entries, it);
      return &entries.front();
    }
    return nullptr;
  }

  // Keeps `entry` (leased) at the front; the entries it pushes past the limits go to
  // `dropped`, for the caller to destroy outside the lock (destroying waits for their launches).
  CacheEntry* keep(CacheEntry entry, std::list<CacheEntry>& dropped) {
    const std::lock_guard lock(mutex);
    counts.device_bytes += entry.bytes;
    ++counts.misses;
    entry.in_use = true;
    entries.push_front(std::move(entry));
    trim(dropped);
    return &entries.front();
  }

  // Ends the lease of `entry`: kept (and the limits enforced) while the cache lives, else
  // dropped into `dropped`.
  void give_back(CacheEntry* entry, std::list<CacheEntry>& dropped) noexcept {
    const std::lock_guard lock(mutex);
    entry->in_use = false;
    if (open) {
      trim(dropped);
      return;
    }
    const auto it = std::find_if(entries.begin(), entries.end(),
                                 [entry](const CacheEntry& e) { return &e == entry; });
    counts.device_bytes -= entry->bytes;
    dropped.splice(dropped.end(), entries, it);
  }

  // Moves free entries, least recently used first, to `dropped` while over a limit; held lock.
  void trim(std::list<CacheEntry>& dropped) noexcept {
    auto over = [this] {
      return entries.size() > limits.executables || counts.device_bytes > limits.device_bytes;
    };
    for (auto it = entries.end(); over() && it != entries.begin();) {
      --it;
      if (it->in_use) continue;
      counts.device_bytes -= it->bytes;
      ++counts.evictions;
      dropped.splice(dropped.end(), entries, it++);
    }
  }

  // Moves every free entry to `dropped`; held lock.
  void drop_free(std::list<CacheEntry>& dropped) noexcept {
    for (auto it = entries.begin(); it != entries.end();) {
      if (it->in_use) {
        ++it;
        continue;
      }
      counts.device_bytes -= it->bytes;
      dropped.splice(dropped.end(), entries, it++);
    }
  }
};

void collide_structure_hashes(ExecutableCache& cache) {
  cache.state_->hash = [](const Recording&) -> std::uint64_t { return 0; };
}

}  // namespace detail

CachedExecutable::CachedExecutable(std::shared_ptr<detail::CacheState> cache,
                                   detail::CacheEntry* entry, bool hit) noexcept
    : cache_(std::move(cache)), entry_(entry), executable_(&entry->executable), hit_(hit) {}

CachedExecutable::CachedExecutable(CachedExecutable&& other) noexcept
    : cache_(std::move(other.cache_)),
      entry_(std::exchange(other.entry_, nullptr)),
      executable_(std::exchange(other.executable_, nullptr)),
      hit_(other.hit_) {}

CachedExecutable& CachedExecutable::operator=(CachedExecutable&& other) noexcept {
  if (this != &other) {
    give_back();
    cache_ = std::move(other.cache_);
    entry_ = std::exchange(other.entry_, nullptr);
    executable_ = std::exchange(other.executable_, nullptr);
    hit_ = other.hit_;
  }
  return *this;
}

CachedExecutable::~CachedExecutable() { give_back(); }

void CachedExecutable::give_back() noexcept {
  if (!entry_) return;
  std::list<detail::CacheEntry> dropped;
  cache_->give_back(std::exchange(entry_, nullptr), dropped);
  executable_ = nullptr;
  cache_.reset();
}

ExecutableCache::ExecutableCache(CacheLimits limits)
    : state_(std::make_shared<detail::CacheState>(limits)) {}

ExecutableCache::~ExecutableCache() {
  std::list<detail::CacheEntry> dropped;
  const std::lock_guard lock(state_->mutex);
  state_->open = false;
  state_->drop_free(dropped);
}

CachedExecutable ExecutableCache::acquire(CommandBuffer& frame, const Device& device,
                                          const CompileOptions& options) {
  detail::CacheState& state = *state_;
  const std::shared_ptr<detail::Recording>& rec = detail::recording_of(frame);
  const std::uint64_t hash = [&] {
    const detail::Recording::UseGuard guard(*rec);
    return state.hash(*rec);
  }();
  std::vector<const detail::CacheEntry*> tried;
  while (detail::CacheEntry* entry = state.lease(hash, device, options, tried)) {
    CachedExecutable lease(state_, entry, true);
    try {
      entry->executable.update(frame);
    } catch (const Error& e) {
      if (e.code() != errc::update_refused) throw;
      // Another structure of the same hash: refused before anything changed.
      tried.push_back(entry);
      const std::lock_guard lock(state.mutex);
      ++state.counts.collisions;
      continue;
    }
    const std::lock_guard lock(state.mutex);
    ++state.counts.hits;
    ++entry->hits;
    return lease;
  }
  Executable executable = compile(frame, device, options);
  std::string name = executable.name();
  const Backend backend = executable.impl().stats().backend;
  const std::size_t bytes = executable.impl().stats().transient_bytes;
  std::list<detail::CacheEntry> dropped;
  detail::CacheEntry* entry = state.keep(
      {hash, device, options, std::move(executable), std::move(name), backend, bytes}, dropped);
  return CachedExecutable(state_, entry, false);
}

CacheStats ExecutableCache::stats() const {
  const std::lock_guard lock(state_->mutex);
  CacheStats stats = state_->counts;
  stats.executables = state_->entries.size();
  for (const detail::CacheEntry& e : state_->entries) {
    stats.entries.push_back({e.name, e.backend, e.device, e.bytes, e.hits, e.in_use});
  }
  return stats;
}

void ExecutableCache::clear() {
  std::list<detail::CacheEntry> dropped;
  const std::lock_guard lock(state_->mutex);
  state_->drop_free(dropped);
}

}  // namespace cmdgraph
