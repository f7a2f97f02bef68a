// QueueState: the ordered lane behind a Queue. On a CUDA device, a non-blocking stream with
// a priority, plus the fences of launches not yet reported by a wait. On the host device, a
// FIFO of jobs that start one after another on the host pool.
#pragma once

#include <cmdgraph/detail/native.hpp>
#include <cmdgraph/device.hpp>
#include <cmdgraph/queue.hpp>

#if CMDGRAPH_HAVE_CUDA
#include "cuda/handles.hpp"
#endif

#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace cmdgraph::detail {

class FenceState;

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
  /// The CUDA stream priority actually used (0 on the host).
  int native_priority() const noexcept { return native_priority_; }
  /// The CUDA stream (null on the host device).
  NativeStream stream() const noexcept;

  /// Host lane: `job` starts once every job submitted before it has finished.
  void submit(Job job);
  /// CUDA: remembers a launch's fence so wait() can report its error.
  void track(std::shared_ptr<FenceState> fence);
  /// Blocks until everything submitted has finished; rethrows the first error since the
  /// previous wait.
  void wait();
  bool wait_for(std::chrono::nanoseconds timeout);

 private:
  void start(Job job);
  void finished(std::exception_ptr error);
  /// Takes the first error of the tracked fences (all finished by now) and forgets them.
  std::exception_ptr take_device_error();
  void rethrow_pending_error(std::unique_lock<std::mutex>& lock);

  Device device_;
  Priority priority_;
  int native_priority_ = 0;
#if CMDGRAPH_HAVE_CUDA
  cuda::Stream stream_;
#endif
  std::mutex mutex_;
  std::condition_variable idle_;
  std::deque<Job> pending_;
  bool running_ = false;
  std::exception_ptr first_error_;
  std::vector<std::shared_ptr<FenceState>> tracked_;
};

}  // namespace cmdgraph::detail
