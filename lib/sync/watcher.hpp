// Watcher: one library thread that polls things the host cannot be told about (device fences,
// semaphore values written by a GPU, CUDA events) and acts when they are reached.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace cmdgraph::detail {

class Watcher {
 public:
  /// Returns true once it has seen its condition and acted on it; false to be polled again.
  using Poll = std::function<bool()>;

  static Watcher& instance();
  /// Polls `poll` (first right away) until it returns true. Polls must not block.
  void watch(Poll poll);
  ~Watcher();

 private:
  Watcher();
  void loop();
  std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<Poll> watched_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace cmdgraph::detail
