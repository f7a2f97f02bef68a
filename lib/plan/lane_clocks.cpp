// LaneClocks: the fewest event waits for the lanes and order chosen, by vector clocks.
#include "plan/lane_clocks.hpp"

#include <algorithm>

namespace cmdgraph::detail {

LaneClocks::LaneClocks(std::size_t tasks, std::size_t lanes)
    : stride_(std::max<std::size_t>(1, lanes)),
      clocks_(stride_ * stride_, nothing),
      seen_(tasks * stride_, nothing),
      position_(tasks, 0),
      next_(stride_, 0),
      lane_(tasks, 0),
      scratch_(stride_, nothing) {
  clock(0)[0] = -1;  // lane 0 follows the fork
}

std::uint32_t LaneClocks::open_lane() { return lanes_++; }

void LaneClocks::absorb(std::int32_t* into, std::uint32_t task) const {
  const std::int32_t* from = seen(task);
  for (std::size_t k = 0; k < lanes_; ++k) into[k] = std::max(into[k], from[k]);
}

std::size_t LaneClocks::count_waits(std::uint32_t lane, std::span<const std::uint32_t> parents) {
  // The lane's own clock until the first wait: most parents are already followed.
  const std::int32_t* now = clock(lane);
  std::size_t waits = 0;
  for (std::uint32_t p : parents) {
    const std::uint32_t on = lane_[p];
    if (on == lane || now[on] >= position_[p]) continue;
    if (waits++ == 0) {
      std::copy(now, now + lanes_, scratch_.begin());
      now = scratch_.data();
    }
    absorb(scratch_.data(), p);
  }
  return waits;
}

bool LaneClocks::enqueue(std::uint32_t task, std::uint32_t lane,
                         std::span<const std::uint32_t> parents,
                         std::vector<std::uint32_t>& waits) {
  std::int32_t* now = clock(lane);
  for (std::uint32_t p : parents) {
    const std::uint32_t on = lane_[p];
    if (on == lane || now[on] >= position_[p]) continue;
    waits.push_back(p);
    absorb(now, p);
  }
  const bool fork_wait = now[0] < -1;
  if (fork_wait) now[0] = -1;
  lane_[task] = lane;
  position_[task] = next_[lane]++;
  now[lane] = position_[task];
  std::copy(now, now + lanes_, &seen_[task * stride_]);
  return fork_wait;
}

std::vector<std::uint32_t> LaneClocks::join(std::span<const std::uint32_t> tails) {
  std::vector<std::uint32_t> joins;
  std::int32_t* main = clock(0);
  for (std::uint32_t tail : tails) {
    const std::uint32_t on = lane_[tail];
    if (on == 0 || main[on] >= position_[tail]) continue;
    joins.push_back(tail);
    absorb(main, tail);
  }
  return joins;
}

}  // namespace cmdgraph::detail
