// ThreadPool: the host backend's workers, shared by every host queue and executable, and the
// callback thread; both grow a spare worker while one of theirs waits in a cmdgraph wait.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace cmdgraph::detail {

/// A work queue served by `threads` workers. Managed blocking: a worker that enters a
/// cmdgraph wait (BlockingWait) stops counting as one, and while work is queued, no worker is
/// idle and fewer than `threads` are unblocked, the pool starts a spare; spares retire as soon
/// as the unblocked workers are `threads` or more again. At most `max_threads` threads live.
class ThreadPool {
 public:
  explicit ThreadPool(std::size_t threads, std::size_t max_threads = 256);
  ~ThreadPool();  // runs what is queued, then joins
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  void post(std::function<void()> work);
  /// The workers it keeps busy when nothing blocks (what parallel work is split for).
  std::size_t size() const noexcept { return core_; }
  /// Threads alive now, spares included.
  std::size_t threads();

 private:
  friend class BlockingWait;
  void work_loop();
  /// Called with mutex_ held: starts a spare if queued work has no unblocked worker to run it.
  /// Returns false when one was needed but none could be started.
  bool add_spare_if_needed();
  void enter_blocking(bool may_throw);
  void leave_blocking() noexcept;

  const std::size_t core_;
  const std::size_t max_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::size_t idle_ = 0;     // workers waiting for work
  std::size_t blocked_ = 0;  // workers inside a BlockingWait
  std::vector<std::thread> workers_;
  std::vector<std::thread::id> retired_;  // exited; joined by the next spare or the destructor
};

/// Marks the calling thread as blocked in a cmdgraph wait for its lifetime, when the thread is
/// a pool worker (else it does nothing): the pool then runs queued work on a spare, so a
/// callback or host task that waits for more work of its own pool cannot deadlock it. Every
/// cmdgraph wait (Fence, Queue, Event, TimelineSemaphore) opens one before it blocks. Throws
/// Error(out_of_memory) when a spare is needed but the pool is at its bound (or the system
/// refuses a thread), unless `may_throw` is false (destructors' waits).
class BlockingWait {
 public:
  explicit BlockingWait(bool may_throw = true);
  ~BlockingWait();
  BlockingWait(const BlockingWait&) = delete;
  BlockingWait& operator=(const BlockingWait&) = delete;

 private:
  ThreadPool* pool_;
};

/// The process-wide pool (hardware threads, at least 2), created on first use.
ThreadPool& host_pool();
/// The thread that runs users' continuations (Fence::then, coroutine resumption), in order:
/// never CUDA's callback thread, never a worker the host backend needs. While a continuation
/// waits in a cmdgraph wait, the next ones run on a spare.
ThreadPool& callback_thread();

}  // namespace cmdgraph::detail
