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
      lane_(tasks, 0) {
  clock(0)[0] = -1;  // lane 0 follows the fork
}

std::uint32_t LaneClocks::open_lane() { return lanes_++; }

void LaneClocks::absorb(std::int32_t* into, std::uint32_t task) const {
  const std::int32_t* from = seen(task);
  for (std::size_t k = 0; k < lanes_; ++k) into[k] = std::max(into[k], from[k]);
}

std::size_t LaneClocks::count_waits(std::uint32_t lane, std::span<const std::uint32_t> parents) {
  // As enqueue, without growing a clock: a parent is followed when the lane's clock or a
  // parent already waited on reaches it (a parent or two, against a clock per wait).
  const std::int32_t* now = clock(lane);
  waited_.clear();
  for (std::uint32_t p : parents) {
    const std::uint32_t on = lane_[p];
    if (on == lane || now[on] >= position_[p]) continue;
    const bool followed = std::any_of(waited_.begin(), waited_.end(), [&](std::uint32_t w) {
      return seen(w)[on] >= position_[p];
    });
    if (!followed) waited_.push_back(p);
  }
  return waited_.size();
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
