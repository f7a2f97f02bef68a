// CallbackThread: the library-owned thread that runs users' continuations (Fence::then,
// coroutine resumption) in order, so they never run inside CUDA's callback thread or hold up
// cmdgraph's workers.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace cmdgraph::detail {

class CallbackThread {
 public:
  static CallbackThread& instance();
  void post(std::function<void()> work);
  ~CallbackThread();

 private:
  CallbackThread();
  void loop();
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace cmdgraph::detail
