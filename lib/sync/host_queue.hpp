// HostQueue: a queue of the host device, a FIFO of jobs each started once the one before it
// has finished, on the host pool.
#pragma once

#include "sync/queue_state.hpp"

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>

namespace cmdgraph::detail {

class HostQueue final : public QueueState {
 public:
  /// Called by a job exactly once when it has finished, with its error if it failed, and the
  /// fence it completes, if any: the queue completes it as it moves past the job, so whoever
  /// sees the fence done sees the queue past the job (idle, if nothing came after it).
  using Done = std::function<void(std::exception_ptr error, FenceState* fence)>;
  /// A unit of work: starts, and eventually calls `done` (from any thread).
  using Job = std::function<void(Done done)>;

  HostQueue() : QueueState(Device::host(), 0) {}
  ~HostQueue() override;

  /// `job` starts once every job submitted before it has finished.
  void submit(Job job);

  void wait_event(const std::shared_ptr<EventState>& event) override;
  void record_event(const std::shared_ptr<EventState>& event) override;
  void wait() override;
  bool wait_for(std::chrono::nanoseconds timeout) override;
  void synchronize_quietly() noexcept override;
  HostQueue* as_host() noexcept override { return this; }

 private:
  void start(Job job);
  void finished(std::exception_ptr error, FenceState* fence);
  void rethrow_pending_error(std::unique_lock<std::mutex>& lock);

  std::mutex mutex_;
  std::condition_variable idle_;
  std::deque<Job> jobs_;
  // HostWork's tickets of the running job (front) and of those queued behind it: freeing host
  // memory is deferred behind them.
  std::deque<std::uint64_t> tickets_;
  bool running_ = false;
  bool finishing_ = false;  // the last job's fence is done; its continuations are starting
  std::exception_ptr first_error_;
};

}  // namespace cmdgraph::detail
