// QueueState: the ordered lane behind a Queue. On a CUDA device, a non-blocking stream with
// a priority; it records each launch's completion marker only when the launch's fence is still
// held when the next launch comes (or is queried), and remembers which executables launched
// since the last wait so the wait can report their errors. On the host device, a FIFO of jobs
// that start one after another on the host pool.
#pragma once

#include <cmdgraph/detail/native.hpp>
#include <cmdgraph/device.hpp>
#include <cmdgraph/queue.hpp>
#include <cmdgraph/semaphore.hpp>

#if CMDGRAPH_HAVE_CUDA
#include "cuda/handles.hpp"
#endif

#include <chrono>
#include <cstdint>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace cmdgraph::detail {

class EventState;
class FenceState;

/// Where a queue's wait finds the errors of launches it did not watch one by one: one per
/// executable instance, asked about a range of its launch numbers.
class LaunchErrors {
 public:
  virtual ~LaunchErrors() = default;
  /// The first error among launches [first, last], all finished; `device_status` is what
  /// synchronizing the stream returned (non-zero after a device fault).
  virtual std::exception_ptr first_error(std::uint64_t first, std::uint64_t last,
                                         int device_status) const = 0;
};

class QueueState {
 public:
  /// Called by a job exactly once when it has finished, with its error if it failed.
  using Done = std::function<void(std::exception_ptr)>;
  /// A unit of host-lane work: starts, and eventually calls `done` (any thread).
  using Job = std::function<void(Done done)>;

  QueueState(Device device, Priority priority);
  /// A queue with an explicit CUDA stream priority, clamped to the device's range.
  QueueState(Device device, int native_priority);
  ~QueueState();

  Device device() const noexcept { return device_; }
  Priority priority() const noexcept { return priority_; }
  /// The CUDA stream priority actually used (0 on the host).
  int native_priority() const noexcept { return native_priority_; }
  /// The CUDA stream (null on the host device).
  NativeStream stream() const noexcept;

  /// Host lane: `job` starts once every job submitted before it has finished.
  void submit(Job job);

  /// CUDA: holds the queue while one launch enqueues its work. Opening it records the
  /// previous launch's marker if that launch's fence is still held, so the marker lands right
  /// after that launch.
  class Submission {
   public:
    explicit Submission(QueueState& queue);
    Submission(const Submission&) = delete;
    Submission& operator=(const Submission&) = delete;
    /// The launch is enqueued: its fence (unmarked) and where its errors are kept.
    void commit(const std::shared_ptr<FenceState>& fence,
                const std::shared_ptr<const LaunchErrors>& errors, std::uint64_t launch);

   private:
    QueueState& queue_;
    std::lock_guard<std::mutex> lock_;
  };
  /// Records `fence`'s marker now if it is still waiting for one.
  void mark(FenceState& fence);

  /// CUDA, inside a Submission: the stream waits for every `info.wait` value (before the
  /// work) or writes every `info.signal` value (after it).
  void enqueue_semaphore_waits(const SubmitInfo& info);
  void enqueue_semaphore_signals(const SubmitInfo& info);
  /// Later work waits for `event`'s most recent record so far.
  void wait_event(const std::shared_ptr<EventState>& event);
  /// Marks `event` after the work submitted so far.
  void record_event(const std::shared_ptr<EventState>& event);
  /// Waits for everything enqueued so far, reporting nothing (for destructors).
  void synchronize_quietly() noexcept;
  /// Blocks until everything submitted has finished; rethrows the first error since the
  /// previous wait.
  void wait();
  bool wait_for(std::chrono::nanoseconds timeout);

 private:
  void start(Job job);
  void finished(std::exception_ptr error);
  /// After the stream was synchronized with `status`: settles the pending fence and returns
  /// the first error of the launches since the previous wait, forgetting them.
  std::exception_ptr take_device_error(int status);
  void rethrow_pending_error(std::unique_lock<std::mutex>& lock);

  struct LaunchRange {
    std::shared_ptr<const LaunchErrors> errors;
    std::uint64_t first, last;
  };

  Device device_;
  Priority priority_;
  int native_priority_ = 0;
#if CMDGRAPH_HAVE_CUDA
  cuda::Stream stream_;
#endif
  std::mutex mutex_;
  std::condition_variable idle_;
  std::deque<Job> jobs_;
  bool running_ = false;
  std::exception_ptr first_error_;
  std::shared_ptr<FenceState> pending_;  // the last launch's fence, not marked yet
  std::vector<LaunchRange> unreported_;  // per executable: launches since the last wait
};

}  // namespace cmdgraph::detail
