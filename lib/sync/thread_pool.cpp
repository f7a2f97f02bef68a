// ThreadPool: a mutex-and-condition-variable work queue; simple and fair. Spares come and go
// with BlockingWait; a thread that retires cannot join itself, so it leaves its id behind.
#include "sync/thread_pool.hpp"

#include "device/host_work.hpp"

#include <cmdgraph/error.hpp>

#include <algorithm>
#include <string>
#include <system_error>

namespace cmdgraph::detail {
namespace {
thread_local ThreadPool* current_pool = nullptr;  // the pool whose worker this thread is
}  // namespace

ThreadPool::ThreadPool(std::size_t threads, std::size_t max_threads)
    : core_(std::max<std::size_t>(threads, 1)), max_(std::max(max_threads, core_)) {
  std::lock_guard lock(mutex_);  // the first workers read workers_ while the others start
  workers_.reserve(core_);
  for (std::size_t i = 0; i < core_; ++i) workers_.emplace_back([this] { work_loop(); });
}

ThreadPool::~ThreadPool() {
  std::vector<std::thread> workers;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  ready_.notify_all();
  // Threads retiring meanwhile only touch retired_, under the lock; join them all.
  for (;;) {
    {
      std::lock_guard lock(mutex_);
      if (workers_.empty()) break;
      workers.swap(workers_);
    }
    for (auto& w : workers) w.join();
    workers.clear();
  }
}

std::size_t ThreadPool::threads() {
  std::lock_guard lock(mutex_);
  return workers_.size() - retired_.size();
}

void ThreadPool::post(std::function<void()> work) {
  bool wake = false;
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(std::move(work));
    wake = idle_ > 0;
    if (!wake) add_spare_if_needed();  // if none can start, a worker takes it once free
  }
  if (wake) ready_.notify_one();
}

bool ThreadPool::add_spare_if_needed() {
  const std::size_t alive = workers_.size() - retired_.size();
  if (queue_.empty() || idle_ > 0 || stopping_ || alive - blocked_ >= core_) return true;
  if (alive >= max_) return false;
  // Join the threads that retired since the last spare (they have left work_loop).
  std::vector<std::thread> gone;
  for (const std::thread::id id : retired_) {
    const auto it = std::find_if(workers_.begin(), workers_.end(),
                                 [&](const std::thread& t) { return t.get_id() == id; });
    gone.push_back(std::move(*it));
    workers_.erase(it);
  }
  retired_.clear();
  for (auto& t : gone) t.join();
  try {
    workers_.emplace_back([this] { work_loop(); });
  } catch (const std::system_error&) {
    return false;
  }
  return true;
}

void ThreadPool::enter_blocking(bool may_throw) {
  std::lock_guard lock(mutex_);
  ++blocked_;
  if (!add_spare_if_needed() && may_throw) {
    --blocked_;
    throw Error(errc::out_of_memory,
                "a cmdgraph wait on one of cmdgraph's pool threads needs a spare thread for the "
                "work queued behind it, and none could be started (" +
                    std::to_string(workers_.size() - retired_.size()) + " threads alive, at most " +
                    std::to_string(max_) +
                    "): host tasks and then()/co_await continuations that wait on more cmdgraph "
                    "work than that would deadlock");
  }
}

void ThreadPool::leave_blocking() noexcept {
  bool excess = false;
  {
    std::lock_guard lock(mutex_);
    --blocked_;
    excess = workers_.size() - retired_.size() - blocked_ > core_ && idle_ > 0;
  }
  if (excess) ready_.notify_all();  // idle spares retire
}

void ThreadPool::work_loop() {
  current_pool = this;
  std::unique_lock lock(mutex_);
  for (;;) {
    // A spare retires once enough unblocked workers are back.
    if (workers_.size() - retired_.size() - blocked_ > core_) break;
    if (queue_.empty()) {
      if (stopping_) return;
      ++idle_;
      ready_.wait(lock);
      --idle_;
      continue;
    }
    std::function<void()> work = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    work();
    work = nullptr;  // destroy what the work captured before taking the lock
    lock.lock();
  }
  retired_.push_back(std::this_thread::get_id());
  // A notification meant for queued work may have woken this thread: pass it on.
  if (!queue_.empty()) ready_.notify_one();
}

BlockingWait::BlockingWait(bool may_throw) : pool_(current_pool) {
  if (pool_) pool_->enter_blocking(may_throw);
}

BlockingWait::~BlockingWait() {
  if (pool_) pool_->leave_blocking();
}

ThreadPool& callback_thread() {
  static ThreadPool thread(1);
  return thread;
}

ThreadPool& host_pool() {
  static ThreadPool pool(host_threads());
  return pool;
}

}  // namespace cmdgraph::detail
