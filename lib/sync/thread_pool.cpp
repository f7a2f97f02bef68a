// ThreadPool: a mutex-and-condition-variable work queue; simple and fair.
#include "sync/thread_pool.hpp"

#include <algorithm>

namespace cmdgraph::detail {

ThreadPool::ThreadPool(std::size_t threads) {
  workers_.reserve(threads);
  for (std::size_t i = 0; i < threads; ++i) workers_.emplace_back([this] { work_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  ready_.notify_all();
  for (auto& w : workers_) w.join();
}

void ThreadPool::post(std::function<void()> work) {
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(std::move(work));
  }
  ready_.notify_one();
}

void ThreadPool::work_loop() {
  for (;;) {
    std::function<void()> work;
    {
      std::unique_lock lock(mutex_);
      ready_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping and drained
      work = std::move(queue_.front());
      queue_.pop_front();
    }
    work();
  }
}

ThreadPool& callback_thread() {
  static ThreadPool thread(1);
  return thread;
}

ThreadPool& host_pool() {
  static ThreadPool pool(std::max(2u, std::thread::hardware_concurrency()));
  return pool;
}

}  // namespace cmdgraph::detail
