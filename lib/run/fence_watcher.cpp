// FenceWatcher: polls watched fences with a short back-off; sleeps while none is watched.
#include "run/fence_watcher.hpp"

#include "run/fence_state.hpp"

#include <algorithm>
#include <chrono>

namespace cmdgraph::detail {

FenceWatcher& FenceWatcher::instance() {
  static FenceWatcher watcher;
  return watcher;
}

FenceWatcher::FenceWatcher() : thread_([this] { loop(); }) {}

FenceWatcher::~FenceWatcher() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void FenceWatcher::watch(std::shared_ptr<FenceState> fence) {
  {
    std::lock_guard lock(mutex_);
    watched_.push_back(std::move(fence));
  }
  wake_.notify_one();
}

void FenceWatcher::loop() {
  using namespace std::chrono_literals;
  auto pause = 2us;
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return stopping_ || !watched_.empty(); });
    if (stopping_) return;
    std::vector<std::shared_ptr<FenceState>> batch;
    batch.swap(watched_);
    lock.unlock();
    std::vector<std::shared_ptr<FenceState>> pending;
    for (auto& f : batch) {
      if (f->device_->query()) {
        f->resolve();
      } else {
        pending.push_back(std::move(f));
      }
    }
    const bool progressed = pending.size() < batch.size();
    pause = progressed ? 2us : std::min<std::chrono::microseconds>(pause * 2, 500us);
    if (!pending.empty()) std::this_thread::sleep_for(pause);
    lock.lock();
    watched_.insert(watched_.end(), pending.begin(), pending.end());
  }
}

}  // namespace cmdgraph::detail
