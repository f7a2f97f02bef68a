// Vector clocks over lanes: which event waits a task needs on a lane so that it follows its
// parents on other lanes, given what the lane already follows through its earlier tasks and
// waits. Pure scheduling, no CUDA.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace cmdgraph::detail {

/// Tasks enqueued one by one, each on a lane, in an order in which parents come first. A
/// lane's clock holds, for each lane K, the last position on K it is known to follow; lane 0
/// starts after the fork (position -1 on lane 0: the queue's work before the launch). A task
/// waits on a parent only when its lane's clock, grown by the waits it already took, does not
/// reach the parent: given the parents latest enqueued first, each such wait is forced
/// (nothing enqueued before that parent knows it), so the set is the smallest for the lane and
/// order (test `lanes.waits_are_the_fewest_for_the_lanes_chosen`).
class LaneClocks {
 public:
  /// Room for `tasks` tasks on at most `lanes` lanes; lane 0 is open.
  LaneClocks(std::size_t tasks, std::size_t lanes);

  std::uint32_t lanes() const noexcept { return lanes_; }
  /// Opens the next lane (nothing on it, knowing nothing); returns its index.
  std::uint32_t open_lane();
  /// How many waits task `parents` (enqueued, latest first) would need on `lane`.
  std::size_t count_waits(std::uint32_t lane, std::span<const std::uint32_t> parents);
  /// Enqueues `task` on `lane` after its `parents` (latest first): appends the tasks it must
  /// wait on to `waits`; returns whether it must also wait on the fork.
  bool enqueue(std::uint32_t task, std::uint32_t lane, std::span<const std::uint32_t> parents,
               std::vector<std::uint32_t>& waits);
  /// Has lane 0 wait on each other lane's last task it does not follow yet, and returns them.
  std::vector<std::uint32_t> join(std::span<const std::uint32_t> tails);

 private:
  static constexpr std::int32_t nothing = -2;  // a lane followed at no position at all

  std::int32_t* clock(std::uint32_t lane) { return &clocks_[lane * stride_]; }
  const std::int32_t* seen(std::uint32_t task) const { return &seen_[task * stride_]; }
  void absorb(std::int32_t* into, std::uint32_t task) const;

  std::size_t stride_;                 // lanes at most: the length of every clock
  std::uint32_t lanes_ = 1;
  std::vector<std::int32_t> clocks_;   // lane x stride: each lane's clock now
  std::vector<std::int32_t> seen_;     // task x stride: its lane's clock just after it
  std::vector<std::int32_t> position_;   // task -> its place on its lane
  std::vector<std::int32_t> next_;       // lane -> the next task's place there
  std::vector<std::uint32_t> lane_;      // task -> its lane
  std::vector<std::uint32_t> waited_;    // count_waits: the parents it would wait on
};

}  // namespace cmdgraph::detail
