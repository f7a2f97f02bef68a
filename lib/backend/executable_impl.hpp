// ExecutableImpl: what every backend's compiled form provides to Executable.
#pragma once

#include "plan/plan.hpp"
#include "record/argument_store.hpp"

#include <cmdgraph/executable.hpp>
#include <cmdgraph/fence.hpp>

#include <memory>
#include <string>
#include <vector>
#include <utility>

namespace cmdgraph::detail {

class EventState;
class QueueState;

class ExecutableImpl {
 public:
  ExecutableImpl(std::shared_ptr<const Plan> plan, Device device, ExecutableStats stats)
      : plan_(std::move(plan)), device_(device), stats_(std::move(stats)),
        recorded_events_(events_recorded_by(*plan_)) {}
  virtual ~ExecutableImpl() = default;

  /// Enqueues one run on `queue`, after this executable's previous run and `info`'s waits;
  /// `info`'s signals follow the run, before its fence signals. `info` is validated.
  virtual Fence launch(const std::shared_ptr<QueueState>& queue, const SubmitInfo& info) = 0;
  virtual std::unique_ptr<ExecutableImpl> clone() const = 0;

  /// The values update() writes into; launches from now on use them, a launch in flight
  /// keeps the values it started with.
  virtual ArgumentStore& arguments_for_update() = 0;
  /// Makes the values of root command `c`, already written, take effect.
  virtual void apply_update(std::uint32_t c) = 0;
  /// Throws, naming root command `c`, unless this executable's device can reach `r`.
  virtual void check_memory(std::uint32_t c, const MemoryRange& r) const = 0;
  /// Takes a re-recorded plan (already validated) in place, or rebuilds when allowed.
  virtual UpdateResult update_from(std::shared_ptr<const Plan> plan,
                                   const UpdateOptions& options) = 0;

  /// The timings of the most recent launch, waiting for it; Error(wrong_state) when not
  /// profiling or never launched.
  virtual Profile last_profile() const;
  /// The stream or lane of each root command, where the backend has lanes.
  virtual std::vector<unsigned> command_lanes() const { return {}; }
  /// CUDA's own DOT of the graph (graph backend only).
  virtual void write_cuda_dot(const std::string& path) const;

  const Plan& plan() const noexcept { return *plan_; }
  const std::shared_ptr<const Plan>& shared_plan() const noexcept { return plan_; }
  Device device() const noexcept { return device_; }
  const std::string& name() const noexcept { return plan_->recording->name(); }
  const ExecutableStats& stats() const noexcept { return stats_; }
  ExecutableStats& stats() noexcept { return stats_; }
  /// Events the plan's record commands record (nested plans included).
  const std::vector<std::shared_ptr<EventState>>& recorded_events() const noexcept {
    return recorded_events_;
  }

 protected:
  void replace_plan(std::shared_ptr<const Plan> plan) {
    recorded_events_ = events_recorded_by(*plan);
    plan_ = std::move(plan);
  }

 private:
  static std::vector<std::shared_ptr<EventState>> events_recorded_by(const Plan& plan);

  std::shared_ptr<const Plan> plan_;
  Device device_;
  ExecutableStats stats_;
  std::vector<std::shared_ptr<EventState>> recorded_events_;
};

}  // namespace cmdgraph::detail
