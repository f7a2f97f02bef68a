// Lane assignment: which lane (a stream of the streams backend) runs each task of a flat plan,
// and which events order tasks across lanes. Pure scheduling, no CUDA: lane 0 is the
// submitting queue's own stream, lanes 1.. are the executable's streams. The waits are pruned
// by LaneClocks (lane_clocks.hpp).
#pragma once

#include "plan/flat_plan.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

namespace cmdgraph::detail {

/// What a task asks of its lane's stream: tasks of different classes never share a lane (the
/// streams backend makes each lane's stream at its class's priority).
namespace lane_class {
inline constexpr std::int32_t any = std::numeric_limits<std::int32_t>::max();    // no kernel
inline constexpr std::int32_t queue = std::numeric_limits<std::int32_t>::min();  // the queue's
}  // namespace lane_class

/// Which order tasks are enqueued in, each on a lane as it comes.
enum class LaneOrder {
  by_start,     ///< by estimated start, the heaviest remaining path first among equals
  as_recorded,  ///< in recording order where the edges allow
};

struct LaneSchedule {
  std::uint32_t lanes = 1;                          // lanes used (lane 0 always counts)
  std::vector<std::int32_t> lane_class;             // lane -> its class (lane 0: queue)
  std::vector<std::uint32_t> lane;                  // task -> lane
  std::vector<std::uint32_t> order;                 // tasks in enqueue order (topological)
  std::vector<std::vector<std::uint32_t>> waits;    // task -> tasks whose events it waits on
  std::vector<std::uint8_t> fork_wait;              // task waits on the launch's fork event
  std::vector<std::uint8_t> records;                // task records its event after running
  std::vector<std::uint32_t> joins;                 // tasks lane 0 waits on at the end
  std::uint32_t cross_edges = 0;                    // flat edges between different lanes
  LaneOrder enqueued = LaneOrder::by_start;         // the order `order` follows
  bool by_costs = false;                            // makespan in ns from costs, else in tasks
  std::uint64_t makespan = 0;                       // estimated: the last task's finish
  std::uint64_t host_enqueue = 0;                   // with costs: the host's enqueue, in ns

  /// Events the schedule uses: one per recording task, plus the fork when any lane forks.
  std::uint32_t event_count() const;
  /// cudaStreamWaitEvent calls per launch: cross-lane waits, fork waits and joins.
  std::uint32_t wait_count() const;
  /// A launch's estimated time: with costs (ns), the longer of the device's run and the host's
  /// enqueue, which sets the pace when kernels are short; in units, the makespan.
  std::uint64_t launch_time() const { return std::max(makespan, host_enqueue); }
};

/// Assigns tasks to at most `max_lanes` lanes (at least 1), enqueued in `order`, and prunes
/// the event waits. Each task goes where it can start earliest in a model of the run (lanes
/// run their tasks in order; a task starts once its parents have finished): a lane idle when
/// it is ready, else a new lane while there are any, else the lane free soonest; among lanes
/// equally early, the one that needs the fewest event waits, then its heaviest parent's lane
/// (chains stay on one lane), then the one idle last. Each task counts as its cost plus
/// shaping_launch_unit when every task that takes time has a cost (commands of the compiled
/// buffer itself, not of executed ones), else as one unit; barriers and events as none. A
/// cross-lane edge costs an event wait only when per-lane vector clocks (LaneClocks) do not
/// already imply it: for the lanes and order chosen, the fewest waits that order every edge.
/// `classes` (per task, empty: all lane_class::queue) keeps tasks of different classes apart;
/// lane 0 is of class queue, and a class with no lane yet gets one beyond `max_lanes` if need
/// be.
LaneSchedule assign_lanes_in(LaneOrder order, const FlatPlan& flat, unsigned max_lanes,
                             std::span<const std::int32_t> classes = {});

/// The streams backend's schedule: of the schedules in each LaneOrder, the one with the fewest
/// waits whose estimated launch_time() is no longer than the by_start one's (the critical
/// path first: the reference for time), ties to by_start. With costs no longer means no longer,
/// the host's enqueue counted; counting tasks as units, up to 1/32 longer (see lanes.cpp).
LaneSchedule assign_lanes(const FlatPlan& flat, unsigned max_lanes,
                          std::span<const std::int32_t> classes = {});

}  // namespace cmdgraph::detail
