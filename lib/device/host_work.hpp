// The host device's threads, and its work in flight: what freeing host memory is deferred
// behind, so that no host launch ever reads or writes memory freed under it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cmdgraph::detail {

/// Threads the host device works with: its thread pool's size (sync/thread_pool), reported as
/// its multiprocessors.
std::size_t host_threads() noexcept;

/// Jobs submitted to host queues and not finished yet, numbered in submission order.
/// Process-wide, thread-safe.
class HostWork {
 public:
  /// Frees memory; called once, from whichever thread ends the last job it waited for.
  using Release = void (*)(void* p, int device) noexcept;

  /// A job was submitted; returns its ticket.
  static std::uint64_t begin();
  /// The job with `ticket` finished; runs the releases it was the last to hold back.
  static void end(std::uint64_t ticket) noexcept;
  /// Calls release(p, device) once every job submitted before this call has finished: now,
  /// when none is in flight, else from the thread that ends the last of them. A free is
  /// deferred, never waited for: a job may wait for what the freeing thread does next (a
  /// semaphore it signals), or be the host task that frees.
  static void release_after_earlier(Release release, void* p, int device) noexcept;
};

}  // namespace cmdgraph::detail
