// ExecutableImpl: what every backend's compiled form provides to Executable.
#pragma once

#include "plan/plan.hpp"

#include <cmdgraph/executable.hpp>
#include <cmdgraph/fence.hpp>

#include <memory>
#include <string>

namespace cmdgraph::detail {

class QueueState;

class ExecutableImpl {
 public:
  ExecutableImpl(std::shared_ptr<const Plan> plan, Device device, ExecutableStats stats)
      : plan_(std::move(plan)), device_(device), stats_(std::move(stats)) {}
  virtual ~ExecutableImpl() = default;

  /// Enqueues one run on `queue`, after this executable's previous run.
  virtual Fence launch(QueueState& queue) = 0;
  virtual std::unique_ptr<ExecutableImpl> clone() const = 0;

  const Plan& plan() const noexcept { return *plan_; }
  const std::shared_ptr<const Plan>& shared_plan() const noexcept { return plan_; }
  Device device() const noexcept { return device_; }
  const std::string& name() const noexcept { return plan_->recording->name(); }
  const ExecutableStats& stats() const noexcept { return stats_; }
  ExecutableStats& stats() noexcept { return stats_; }

 private:
  std::shared_ptr<const Plan> plan_;
  Device device_;
  ExecutableStats stats_;
};

}  // namespace cmdgraph::detail
