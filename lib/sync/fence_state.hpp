// FenceState: completion of one submission, with its error and continuations. Host work
// completes it by calling complete(). Device work is watched through a DeviceCompletion: an
// event recorded after the work, but only once someone needs it (see QueueState), so a launch
// whose fence nobody keeps costs no event at all.
#pragma once

#include <cmdgraph/detail/native.hpp>

#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace cmdgraph::detail {

class QueueState;

/// The device side of a fence.
class DeviceCompletion {
 public:
  virtual ~DeviceCompletion() = default;
  /// Records the completion marker on `stream`, where the work was enqueued; everything
  /// enqueued there so far (the work included) precedes it. Called at most once.
  virtual void mark(NativeStream stream) = 0;
  /// Marks it done without a marker: the stream was synchronized after the work, returning
  /// `status` (non-zero after a device fault).
  virtual void mark_finished(int status) = 0;
  /// True once the work has finished, successfully or not. Never blocks. Marked first.
  virtual bool query() = 0;
  /// Blocks until the work has finished. Marked first.
  virtual void synchronize() = 0;
  /// Once finished: the work's error (a device fault, a failed host task), or null. May be
  /// called more than once and must give the same answer.
  virtual std::exception_ptr error() = 0;
};

class FenceState : public std::enable_shared_from_this<FenceState> {
 public:
  FenceState() = default;
  /// Device work enqueued on `queue`, not marked yet; `device` lives as long as this fence
  /// (a derived class holds both in one allocation).
  FenceState(DeviceCompletion* device, std::weak_ptr<QueueState> queue)
      : device_(device), queue_(std::move(queue)) {}
  virtual ~FenceState() = default;

  /// Host work: marks it finished (with `error` if it failed); runs continuations here.
  void complete(std::exception_ptr error = nullptr) { publish(mark_complete(std::move(error))); }
  /// complete() in two steps, for a queue that changes its own state in the same critical
  /// section: mark_complete() makes done() true and returns the continuations; publish() wakes
  /// the waiters and runs them (with no lock of the caller held).
  std::vector<std::function<void()>> mark_complete(std::exception_ptr error);
  void publish(std::vector<std::function<void()>> continuations);
  bool done();
  void wait();
  bool wait_for(std::chrono::nanoseconds timeout);
  /// Once done: the error, if any.
  std::exception_ptr error();
  /// Runs `fn` once finished: now if it is, else on the completing thread (host work) or the
  /// watcher thread (device work). For cmdgraph's own chaining; it must not block.
  void on_complete(std::function<void()> fn);

  /// The device side, for the queue that marks it.
  DeviceCompletion* device() const noexcept { return device_; }

 private:
  /// Device work seen finished: records its error and runs continuations (once).
  void resolve();
  /// Has the queue record the marker if it has not yet.
  void ensure_marked();

  DeviceCompletion* device_ = nullptr;
  std::weak_ptr<QueueState> queue_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  std::exception_ptr error_;
  std::vector<std::function<void()>> continuations_;
};

}  // namespace cmdgraph::detail
