// FenceWatcher: one library thread that notices when watched device fences finish and runs
// their continuations, so callbacks never run inside CUDA's own callback thread.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace cmdgraph::detail {

class FenceState;

class FenceWatcher {
 public:
  static FenceWatcher& instance();
  void watch(std::shared_ptr<FenceState> fence);
  ~FenceWatcher();

 private:
  FenceWatcher();
  void loop();
  std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<std::shared_ptr<FenceState>> watched_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace cmdgraph::detail
