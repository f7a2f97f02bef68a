// poll_until: timed waits where CUDA offers none (events, streams): query, backing off from
// 1 us to 1 ms, until done or the deadline (from deadline_after: time_point::max() never
// passes, and `deadline - now` cannot overflow once now < deadline).
#pragma once

#include <algorithm>
#include <chrono>
#include <thread>

namespace cmdgraph::detail {

template <class Done>
bool poll_until(std::chrono::steady_clock::time_point deadline, Done&& done) {
  auto pause = std::chrono::microseconds(1);
  while (!done()) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return false;
    std::this_thread::sleep_for(std::min<std::chrono::nanoseconds>(pause, deadline - now));
    pause = std::min(pause * 2, std::chrono::microseconds(1000));
  }
  return true;
}

}  // namespace cmdgraph::detail
