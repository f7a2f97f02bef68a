// ExecutableCache: executables kept by the structure of the buffers they were compiled from, so
// a frame re-recorded with a structure seen before updates one instead of compiling.
#pragma once

#include <cmdgraph/device.hpp>
#include <cmdgraph/executable.hpp>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace cmdgraph {

class CommandBuffer;
class ExecutableCache;

namespace detail {
struct CacheState;
struct CacheEntry;
/// For tests: every recording hashes alike in `cache`, so only the full comparison of
/// structures tells them apart.
void collide_structure_hashes(ExecutableCache& cache);
}  // namespace detail

/// How much an ExecutableCache keeps. When a compile takes it past either limit, the least
/// recently used executables not in use are dropped until it is within both again.
struct CacheLimits {
  std::size_t executables = 64;  ///< executables kept, leased ones included
  /// Memory the kept executables hold for their lives, as ExecutableStats::transient_bytes
  /// counts it (their transients' arenas; CUDA's own bookkeeping of a graph is not counted).
  std::size_t device_bytes = std::size_t{1} << 30;
};

/// What an ExecutableCache did and holds.
struct CacheStats {
  std::size_t hits = 0;        ///< acquire() calls served by updating a kept executable
  std::size_t misses = 0;      ///< acquire() calls that compiled
  std::size_t evictions = 0;   ///< executables dropped to stay within the limits
  /// Kept executables whose structure hash matched a frame but whose structure did not (the
  /// frame then went on to the next candidate, or compiled): never a wrong hit.
  std::size_t collisions = 0;
  std::size_t executables = 0;   ///< kept now
  std::size_t device_bytes = 0;  ///< what the kept executables hold (CacheLimits::device_bytes)
  /// One kept executable.
  struct Entry {
    std::string name;              ///< its command buffer's name
    Backend backend = Backend::host;
    Device device = Device::host();
    std::size_t device_bytes = 0;  ///< ExecutableStats::transient_bytes
    std::size_t hits = 0;          ///< frames it served after the one it was compiled for
    bool in_use = false;           ///< leased now (CachedExecutable)
  };
  std::vector<Entry> entries;  ///< most recently used first
};

/// An executable leased from an ExecutableCache: its own user's until the lease ends, when it
/// goes back to the cache (or is dropped, when the cache was destroyed or is over its limits).
/// Launches in flight when it goes back keep running; the cache may hand it to the next frame
/// at once, whose update leaves them their values. Move-only.
class CachedExecutable {
 public:
  CachedExecutable(CachedExecutable&&) noexcept;
  CachedExecutable& operator=(CachedExecutable&&) noexcept;
  ~CachedExecutable();

  Executable& operator*() const noexcept { return *executable_; }
  Executable* operator->() const noexcept { return executable_; }
  /// True when acquire() updated a kept executable; false when it compiled this one.
  bool hit() const noexcept { return hit_; }

 private:
  friend class ExecutableCache;
  CachedExecutable(std::shared_ptr<detail::CacheState> cache, detail::CacheEntry* entry,
                   bool hit) noexcept;
  void give_back() noexcept;

  std::shared_ptr<detail::CacheState> cache_;
  detail::CacheEntry* entry_ = nullptr;
  Executable* executable_ = nullptr;
  bool hit_ = false;
};

/// Executables by structure: acquire(frame) returns a kept executable of the frame's
/// structure, updated in place to the frame's values (a hit, costing what update(CommandBuffer&)
/// costs: for a frame whose values alone changed, a comparison and the changed commands), or
/// compiles the frame (a miss) and keeps what it compiled.
///
/// The structure is what an in-place update needs equal: the commands' kinds and kernels, edges
/// and their kinds, priorities, conditional and executed bodies, transients' sizes, with the
/// device and the CompileOptions. A hash of them finds the candidates; the update's own full
/// comparison decides, so a frame is never served by an executable of another structure.
/// Thread-safe: frames may be acquired from several threads at once; a kept executable serves
/// one lease at a time (a frame whose structure's executables are all leased compiles another).
class ExecutableCache {
 public:
  explicit ExecutableCache(CacheLimits limits = {});
  ExecutableCache(const ExecutableCache&) = delete;
  ExecutableCache& operator=(const ExecutableCache&) = delete;
  /// Drops every kept executable not leased; leases end on their own.
  ~ExecutableCache();

  /// An executable running `frame` on `device` as compile(frame, device, options) would: a
  /// kept one updated to `frame` when one of its structure is free, else a new one compiled
  /// (and kept, within the limits). Errors are compile()'s and update()'s (a frame's own
  /// fault, e.g. a hazard, reaches the caller and the kept executable stays as it was).
  /// \post `frame` is sealed, as after compile().
  CachedExecutable acquire(CommandBuffer& frame, const Device& device,
                           const CompileOptions& options = {});

  CacheStats stats() const;
  /// Drops every kept executable not leased now.
  void clear();

 private:
  friend void detail::collide_structure_hashes(ExecutableCache&);
  std::shared_ptr<detail::CacheState> state_;
};

}  // namespace cmdgraph
