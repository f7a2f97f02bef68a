// Watcher: polls with a short back-off while anything is watched; sleeps otherwise.
#include "sync/watcher.hpp"

#include <algorithm>
#include <chrono>

namespace cmdgraph::detail {

Watcher& Watcher::instance() {
  static Watcher watcher;
  return watcher;
}

Watcher::Watcher() : thread_([this] { loop(); }) {}

Watcher::~Watcher() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void Watcher::watch(Poll poll) {
  {
    std::lock_guard lock(mutex_);
    watched_.push_back(std::move(poll));
  }
  wake_.notify_one();
}

void Watcher::loop() {
  using namespace std::chrono_literals;
  auto pause = 2us;
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return stopping_ || !watched_.empty(); });
    if (stopping_) return;
    std::vector<Poll> batch;
    batch.swap(watched_);
    lock.unlock();
    std::vector<Poll> pending;
    for (auto& poll : batch) {
      if (!poll()) pending.push_back(std::move(poll));
    }
    // Back off while nothing moves, from 2 us to 500 us; snap back on progress.
    const bool progressed = pending.size() < batch.size();
    pause = progressed ? 2us : std::min<std::chrono::microseconds>(pause * 2, 500us);
    if (!pending.empty()) std::this_thread::sleep_for(pause);
    lock.lock();
    watched_.insert(watched_.end(), std::make_move_iterator(pending.begin()),
                    std::make_move_iterator(pending.end()));
  }
}

}  // namespace cmdgraph::detail
