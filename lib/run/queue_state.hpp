// QueueState: the ordered lane behind a Queue. On the host device, a FIFO of jobs that start
// one after another on the host pool; a job reports when it has finished.
#pragma once

#include <cmdgraph/device.hpp>
#include <cmdgraph/queue.hpp>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>

namespace cmdgraph::detail {

class QueueState {
 public:
  /// Called by a job exactly once when it has finished, with its error if it failed.
  using Done = std::function<void(std::exception_ptr)>;
  /// A unit of host-lane work: starts, and eventually calls `done` (any thread).
  using Job = std::function<void(Done done)>;

  QueueState(Device device, Priority priority);
  ~QueueState();

  Device device() const noexcept { return device_; }
  Priority priority() const noexcept { return priority_; }

  /// Host lane: `job` starts once every job submitted before it has finished.
  void submit(Job job);
  /// Blocks until the lane is idle; rethrows the first error since the previous wait.
  void wait();
  bool wait_for(std::chrono::nanoseconds timeout);

 private:
  void start(Job job);
  void finished(std::exception_ptr error);
  void rethrow_pending_error(std::unique_lock<std::mutex>& lock);

  Device device_;
  Priority priority_;
  std::mutex mutex_;
  std::condition_variable idle_;
  std::deque<Job> pending_;
  bool running_ = false;
  std::exception_ptr first_error_;
};

}  // namespace cmdgraph::detail
