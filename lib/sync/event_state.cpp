// EventState's host generations and CUDA handle.
#include "sync/event_state.hpp"

#include "sync/thread_pool.hpp"

#if CMDGRAPH_HAVE_CUDA
#include "cuda/stream_ops.hpp"
#endif

namespace cmdgraph::detail {

EventState::EventState(Device device, bool timing) : device_(device), timing_(timing) {
#if CMDGRAPH_HAVE_CUDA
  if (device.is_cuda()) native_ = cuda::create_event(device.ordinal(), timing);
#endif
}

NativeEvent EventState::native() const noexcept {
#if CMDGRAPH_HAVE_CUDA
  return native_.get();
#else
  return nullptr;
#endif
}

bool EventState::device_reached() const noexcept {
#if CMDGRAPH_HAVE_CUDA
  return cuda::query_event(native()) != cudaErrorNotReady;
#else
  return true;
#endif
}

bool EventState::ever_recorded() const noexcept {
  if (recorded_.load(std::memory_order_acquire)) return true;
  std::lock_guard lock(mutex_);
  return begun_ > 0;
}

std::uint64_t EventState::begin_record() {
  std::lock_guard lock(mutex_);
  return ++begun_;
}

std::uint64_t EventState::latest_begun() {
  std::lock_guard lock(mutex_);
  return begun_;
}

void EventState::finish_record(std::uint64_t generation) {
  std::vector<std::function<void()>> ready;
  {
    std::lock_guard lock(mutex_);
    if (generation > finished_) {
      finished_ = generation;
      finished_at_ = std::chrono::steady_clock::now();
    }
    ready = waiters_.take_reached(finished_);
  }
  finished_cv_.notify_all();
  for (auto& fn : ready) fn();
}

bool EventState::finished_or_defer(std::uint64_t target, std::function<void()> fn) {
  std::lock_guard lock(mutex_);
  if (finished_ >= target) return true;
  waiters_.add(target, std::move(fn));
  return false;
}

bool EventState::finished(std::uint64_t target) const {
  std::lock_guard lock(mutex_);
  return finished_ >= target;
}

void EventState::wait_finished(std::uint64_t target) {
  if (finished(target)) return;
  const BlockingWait blocking;
  std::unique_lock lock(mutex_);
  finished_cv_.wait(lock, [&] { return finished_ >= target; });
}

std::chrono::steady_clock::time_point EventState::finished_at() {
  std::lock_guard lock(mutex_);
  return finished_at_;
}

}  // namespace cmdgraph::detail
