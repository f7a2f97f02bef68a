// ThreadPool: the host backend's workers, shared by every host queue and executable.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace cmdgraph::detail {

class ThreadPool {
 public:
  explicit ThreadPool(std::size_t threads);
  ~ThreadPool();  // runs what is queued, then joins
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  void post(std::function<void()> work);
  std::size_t size() const noexcept { return workers_.size(); }


 private:
  void work_loop();
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

/// The process-wide pool (hardware threads, at least 2), created on first use.
ThreadPool& host_pool();
/// The one thread that runs users' continuations (Fence::then, coroutine resumption), in order:
/// never CUDA's callback thread, never a worker the host backend needs.
ThreadPool& callback_thread();

}  // namespace cmdgraph::detail
