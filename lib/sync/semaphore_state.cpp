// SemaphoreState and the public TimelineSemaphore.
//
// Why mapped pinned memory and stream memory operations: a CUDA queue then waits for a value
// with cuStreamWaitValue64 and signals with cuStreamWriteValue64, entirely on the device (no
// host callback, whose round trip costs ~17 us on the H200 and blocks CUDA's one callback
// thread); the host reads and writes the same word directly. Events per value would need the
// signalling submission to exist before the waiting one is enqueued, which a timeline does not
// promise.
#include "sync/semaphore_state.hpp"

#include "sync/access.hpp"
#include "sync/deadline.hpp"
#include "sync/poll.hpp"
#include "sync/thread_pool.hpp"
#include "sync/watcher.hpp"

#include <cmdgraph/device.hpp>
#include <cmdgraph/error.hpp>
#include <cmdgraph/memory.hpp>
#include <cmdgraph/semaphore.hpp>

#include <algorithm>
#include <atomic>

namespace cmdgraph {
namespace detail {

SemaphoreState::SemaphoreState(std::uint64_t initial)
    : pinned_(pinned_or_host() == MemorySpace::pinned), reserved_(initial) {
  value_ = static_cast<std::uint64_t*>(
      allocate(pinned_ ? MemorySpace::pinned : MemorySpace::host, -1, sizeof(std::uint64_t)));
  std::atomic_ref<std::uint64_t>(*value_).store(initial, std::memory_order_release);
}

SemaphoreState::~SemaphoreState() {
  deallocate(pinned_ ? MemorySpace::pinned : MemorySpace::host, -1, value_);
}

std::uint64_t SemaphoreState::value() const noexcept {
  return std::atomic_ref<std::uint64_t>(*value_).load(std::memory_order_acquire);
}

void SemaphoreState::signal(std::uint64_t value) {
  {
    std::lock_guard lock(mutex_);
    const std::uint64_t now = std::atomic_ref<std::uint64_t>(*value_).load();
    if (value < now) {
      throw Error(errc::invalid_argument, "timeline semaphore signalled with " +
                                              std::to_string(value) + ", below its value " +
                                              std::to_string(now));
    }
    if (value < reserved_) {
      throw Error(errc::invalid_argument,
                  "timeline semaphore signalled from the host with " + std::to_string(value) +
                      ", below the " + std::to_string(reserved_) +
                      " a submission already signals; values must grow");
    }
    reserved_ = std::max(reserved_, value);
    std::atomic_ref<std::uint64_t>(*value_).store(value, std::memory_order_release);
  }
  wake(value);
}

std::uint64_t SemaphoreState::reserve_signal(std::uint64_t value) {
  std::lock_guard lock(mutex_);
  if (value < reserved_) {
    throw Error(errc::invalid_argument, "timeline semaphore: a submission signals " +
                                            std::to_string(value) + " after one that signals " +
                                            std::to_string(reserved_) + "; values must grow");
  }
  return std::exchange(reserved_, value);
}

void SemaphoreState::cancel_signal(std::uint64_t value, std::uint64_t previous) noexcept {
  std::lock_guard lock(mutex_);
  if (reserved_ == value) reserved_ = previous;
}

void SemaphoreState::advance(std::uint64_t value) noexcept {
  {
    std::lock_guard lock(mutex_);
    std::atomic_ref<std::uint64_t> v(*value_);
    if (v.load() < value) v.store(value, std::memory_order_release);
  }
  wake(value);
}

void when_all_reached(const std::vector<SemaphoreValue>& targets, std::function<void()> fn) {
  if (targets.empty()) {
    fn();
    return;
  }
  auto left = std::make_shared<std::atomic<std::size_t>>(targets.size());
  auto shared_fn = std::make_shared<std::function<void()>>(std::move(fn));
  for (const SemaphoreValue& t : targets) {
    t.semaphore->when_reached(t.value, [left, shared_fn] {
      if (left->fetch_sub(1) == 1) (*shared_fn)();
    });
  }
}

void SemaphoreState::wake(std::uint64_t value) {
  std::vector<std::function<void()>> ready;
  {
    std::lock_guard lock(mutex_);
    ready = waiters_.take_reached(value);
  }
  changed_.notify_all();
  for (auto& fn : ready) fn();
}

bool SemaphoreState::wait_until(std::uint64_t value,
                                std::chrono::steady_clock::time_point deadline) {
  if (this->value() >= value) return true;
  if (deadline <= std::chrono::steady_clock::now()) return false;
  const BlockingWait blocking;
  if (!pinned_) {
    // Only the host writes it: a condition variable suffices.
    std::unique_lock lock(mutex_);
    return wait_until_deadline(changed_, lock, deadline, [&] { return this->value() >= value; });
  }
  // A device may write it without telling anyone: poll with back-off.
  return poll_until(deadline, [&] { return this->value() >= value; });
}

void SemaphoreState::when_reached(std::uint64_t value, std::function<void()> fn) {
  std::unique_lock lock(mutex_);
  if (this->value() >= value) {
    lock.unlock();
    fn();
    return;
  }
  if (!pinned_) {
    waiters_.add(value, std::move(fn));  // only host signals can reach it
    return;
  }
  lock.unlock();
  // A device may write the value without telling anyone: the watcher looks for it.
  Watcher::instance().watch([self = shared_from_this(), value, fn = std::move(fn)] {
    if (self->value() < value) return false;
    fn();
    return true;
  });
}

}  // namespace detail

TimelineSemaphore::TimelineSemaphore(std::uint64_t initial)
    : state_(std::make_shared<detail::SemaphoreState>(initial)) {}
SemaphoreValue::SemaphoreValue(const TimelineSemaphore& semaphore_, std::uint64_t value_)
    : semaphore(detail::Access::state(semaphore_)), value(value_) {}
TimelineSemaphore::~TimelineSemaphore() = default;

namespace {
detail::SemaphoreState& checked(const std::shared_ptr<detail::SemaphoreState>& s) {
  if (!s) throw Error(errc::invalid_handle, "a moved-from timeline semaphore was used");
  return *s;
}
}  // namespace

std::uint64_t TimelineSemaphore::value() const { return checked(state_).value(); }
void TimelineSemaphore::signal(std::uint64_t value) { checked(state_).signal(value); }
bool TimelineSemaphore::wait(std::uint64_t value, std::chrono::nanoseconds timeout) const {
  return checked(state_).wait_until(value, detail::deadline_after(timeout));
}
void TimelineSemaphore::wait(std::uint64_t value) const {
  checked(state_).wait_until(value, std::chrono::steady_clock::time_point::max());
}

}  // namespace cmdgraph
