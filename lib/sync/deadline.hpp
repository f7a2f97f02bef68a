// deadline_after: a timed wait's deadline, `now + timeout` saturated to the clock's range, so
// nanoseconds::max() means "no deadline" and a negative timeout "already passed", never an
// overflow. Every timed wait in sync/ takes its deadline from here.
#pragma once

#include <chrono>
#include <condition_variable>
#include <type_traits>

namespace cmdgraph::detail {

/// `now + timeout`, clamped to [time_point::min(), time_point::max()].
inline std::chrono::steady_clock::time_point deadline_after(
    std::chrono::steady_clock::time_point now, std::chrono::nanoseconds timeout) noexcept {
  using clock = std::chrono::steady_clock;
  using rep = clock::duration::rep;
  static_assert(std::is_same_v<clock::duration, std::chrono::nanoseconds>,
                "steady_clock counts nanoseconds here");
  const rep at = now.time_since_epoch().count();
  rep sum = 0;
  if (__builtin_add_overflow(at, timeout.count(), &sum)) {
    return timeout.count() > 0 ? clock::time_point::max() : clock::time_point::min();
  }
  return clock::time_point(clock::duration(sum));
}

/// The deadline of a wait of `timeout` starting now.
inline std::chrono::steady_clock::time_point deadline_after(
    std::chrono::nanoseconds timeout) noexcept {
  return deadline_after(std::chrono::steady_clock::now(), timeout);
}

/// cv.wait_until(lock, deadline, pred), with time_point::max() as an untimed wait.
template <class Lock, class Pred>
bool wait_until_deadline(std::condition_variable& cv, Lock& lock,
                         std::chrono::steady_clock::time_point deadline, Pred pred) {
  if (deadline == std::chrono::steady_clock::time_point::max()) {
    cv.wait(lock, pred);
    return true;
  }
  return cv.wait_until(lock, deadline, pred);
}

}  // namespace cmdgraph::detail
