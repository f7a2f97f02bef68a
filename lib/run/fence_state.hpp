// FenceState: completion of one submission, with its error and continuations. Host work
// completes it by calling complete(); device work is watched through a DeviceCompletion (an
// event recorded after the work) and resolved when first seen finished.
#pragma once

#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace cmdgraph::detail {

/// The device side of a fence.
class DeviceCompletion {
 public:
  virtual ~DeviceCompletion() = default;
  /// True once the work has finished, successfully or not. Never blocks.
  virtual bool query() = 0;
  /// Blocks until the work has finished.
  virtual void synchronize() = 0;
  /// Once finished: the work's error (a device fault, a failed host task), or null. May be
  /// called more than once; must give the same answer.
  virtual std::exception_ptr error() = 0;
};

class FenceState : public std::enable_shared_from_this<FenceState> {
 public:
  FenceState() = default;
  explicit FenceState(std::unique_ptr<DeviceCompletion> device) : device_(std::move(device)) {}

  /// Host work: marks it finished (with `error` if it failed); runs continuations here.
  void complete(std::exception_ptr error = nullptr);
  bool done();
  void wait();
  bool wait_for(std::chrono::nanoseconds timeout);
  /// Once done: the error, if any.
  std::exception_ptr error();
  /// Runs `fn` once finished: now if it is, else on the completing thread (host work) or the
  /// fence watcher thread (device work). For cmdgraph's own chaining; it must not block.
  void on_complete(std::function<void()> fn);

 private:
  friend class FenceWatcher;
  /// Device work seen finished: records its error and runs continuations (once).
  void resolve();

  std::unique_ptr<DeviceCompletion> device_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  std::exception_ptr error_;
  std::vector<std::function<void()>> continuations_;
};

}  // namespace cmdgraph::detail
