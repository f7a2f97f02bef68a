// HostQueue: jobs in submission order on the host pool; events of both kinds of device.
#include "sync/host_queue.hpp"

#include "sync/deadline.hpp"
#include "sync/event_state.hpp"
#include "sync/fence_state.hpp"
#include "device/host_work.hpp"
#include "sync/thread_pool.hpp"
#include "sync/watcher.hpp"

#include <cmdgraph/error.hpp>

#include <utility>

namespace cmdgraph::detail {

HostQueue::~HostQueue() {
  const BlockingWait blocking(false);
  std::unique_lock lock(mutex_);
  idle_.wait(lock, [&] { return !running_; });
}

void HostQueue::submit(Job job) {
  {
    std::lock_guard lock(mutex_);
    tickets_.push_back(HostWork::begin());
    if (running_) {
      jobs_.push_back(std::move(job));
      return;
    }
    running_ = true;
  }
  start(std::move(job));
}

void HostQueue::start(Job job) {
  // The job runs on this thread until it hands its work to the pool; `done` may be called
  // from anywhere, even before job() returns.
  job([this](std::exception_ptr error, FenceState* fence) { finished(std::move(error), fence); });
}

void HostQueue::finished(std::exception_ptr error, FenceState* fence) {
  Job next;
  std::vector<std::function<void()>> continuations;
  bool last = false;
  std::uint64_t ticket = 0;
  {
    std::lock_guard lock(mutex_);
    // The fence's end and the queue's move past its job are one step for a poll: whoever
    // sees the fence done sees the queue idle if nothing came after the job.
    if (fence) continuations = fence->mark_complete(error);
    ticket = tickets_.front();
    tickets_.pop_front();
    if (error && !first_error_) first_error_ = error;
    if (jobs_.empty()) {
      finishing_ = true;
      last = true;
    } else {
      next = std::move(jobs_.front());
      jobs_.pop_front();
    }
  }
  // Memory the job may have used and that was freed meanwhile is released now, outside the
  // queue's lock (a release may call CUDA).
  HostWork::end(ticket);
  // The fence's continuations run before a wait on the queue may return: nothing the launch
  // set going may outlast a queue's wait (a program may end right after it).
  if (fence) fence->publish(std::move(continuations));
  if (last) {
    std::lock_guard lock(mutex_);
    finishing_ = false;
    if (jobs_.empty()) {
      running_ = false;
      idle_.notify_all();  // under the lock: a waiting destructor cannot finish before it
      return;
    }
    next = std::move(jobs_.front());  // submitted while the continuations ran
    jobs_.pop_front();
  }
  // Start the next job from the pool, not from inside this one's completion: a run of jobs
  // that finish at once must not nest on the stack. Out of memory for that: start it here.
  auto shared = std::make_shared<Job>();
  try {
    *shared = std::move(next);
    host_pool().post([this, shared] { start(std::move(*shared)); });
  } catch (...) {
    start(std::move(*shared));
  }
}

void HostQueue::wait_event(const std::shared_ptr<EventState>& event) {
  if (event->device().is_cuda()) {
    // Waiting for a GPU: the watcher polls the event.
    submit([event](Done done) {
      Watcher::instance().watch([event, done] {
        if (!event->device_reached()) return false;
        done(nullptr, nullptr);
        return true;
      });
    });
    return;
  }
  // The wait sees the records submitted before it.
  const std::uint64_t target = event->latest_begun();
  submit([event, target](Done done) {
    if (event->finished_or_defer(target, [done] { done(nullptr, nullptr); })) done(nullptr, nullptr);
  });
}

void HostQueue::record_event(const std::shared_ptr<EventState>& event) {
  if (!event->device().is_host()) {
    throw Error(errc::device_mismatch, "an event of " + event->device().name() +
                                           " cannot be recorded on a queue of the host");
  }
  const std::uint64_t generation = event->begin_record();
  submit([event, generation](Done done) {
    event->finish_record(generation);
    done(nullptr, nullptr);
  });
}

void HostQueue::rethrow_pending_error(std::unique_lock<std::mutex>& lock) {
  if (auto e = std::exchange(first_error_, nullptr)) {
    lock.unlock();
    std::rethrow_exception(e);
  }
}

void HostQueue::wait() {
  std::unique_lock lock(mutex_);
  if (running_) {
    lock.unlock();
    const BlockingWait blocking;
    lock.lock();
    idle_.wait(lock, [&] { return !running_; });
  }
  rethrow_pending_error(lock);
}

bool HostQueue::wait_for(std::chrono::nanoseconds timeout) {
  const auto deadline = deadline_after(timeout);
  std::unique_lock lock(mutex_);
  if (running_) {
    if (timeout <= std::chrono::nanoseconds::zero()) {
      // A poll: the last job's fence is done, only its continuations are being started.
      if (!finishing_ || !jobs_.empty()) return false;
      rethrow_pending_error(lock);
      return true;
    }
    lock.unlock();
    const BlockingWait blocking;
    lock.lock();
    if (!wait_until_deadline(idle_, lock, deadline, [&] { return !running_; })) return false;
  }
  rethrow_pending_error(lock);
  return true;
}

void HostQueue::synchronize_quietly() noexcept {
  std::unique_lock lock(mutex_);
  idle_.wait(lock, [&] { return !running_; });
}

}  // namespace cmdgraph::detail
