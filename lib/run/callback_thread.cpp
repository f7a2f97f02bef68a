// CallbackThread: a FIFO drained by one thread; what is queued at exit still runs.
#include "run/callback_thread.hpp"

namespace cmdgraph::detail {

CallbackThread& CallbackThread::instance() {
  static CallbackThread thread;
  return thread;
}

CallbackThread::CallbackThread() : thread_([this] { loop(); }) {}

CallbackThread::~CallbackThread() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void CallbackThread::post(std::function<void()> work) {
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(std::move(work));
  }
  wake_.notify_one();
}

void CallbackThread::loop() {
  for (;;) {
    std::function<void()> work;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      work = std::move(queue_.front());
      queue_.pop_front();
    }
    work();
  }
}

}  // namespace cmdgraph::detail
