// FenceState: completion of one submission, with its error and internal continuations.
#pragma once

#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <vector>

namespace cmdgraph::detail {

class FenceState {
 public:
  /// Marks the work finished (with `error` if it failed); runs continuations on this thread.
  void complete(std::exception_ptr error = nullptr);
  bool done() const noexcept;
  void wait() const;
  bool wait_for(std::chrono::nanoseconds timeout) const;
  std::exception_ptr error() const;
  /// Runs `fn` once the work finished: now on this thread if it already has, else on the
  /// completing thread. For cmdgraph's own chaining; it must not block.
  void on_complete(std::function<void()> fn);

 private:
  mutable std::mutex mutex_;
  mutable std::condition_variable cv_;
  bool done_ = false;
  std::exception_ptr error_;
  std::vector<std::function<void()>> continuations_;
};

}  // namespace cmdgraph::detail
