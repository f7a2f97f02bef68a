// CudaExecutable: the skeleton both CUDA backends share. A launch holds the queue while the
// backend enqueues its run between the submission's semaphore waits and signals, numbers the
// launch for error attribution and hands back its fence; what launches in flight still use is
// retired to the queue; the destructor waits for the work in flight.
#pragma once

#include "backend/cuda_launch/launch_fence.hpp"
#include "backend/dispatch_reports.hpp"
#include "backend/executable_impl.hpp"
#include "backend/executable_values.hpp"
#include "sync/cuda_queue.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>

namespace cmdgraph::detail {

/// Reports for the indirect commands of `plan` (bodies included) in pinned memory, which the
/// dispatchers write and the host reads; null when it has none.
std::shared_ptr<DispatchReports> pinned_reports(const Plan& plan);

/// How a CUDA backend lowers a plan: what it takes of CompileOptions.
struct CudaLowering {
  unsigned profile_every = 1;  ///< one launch in N is profiled
  bool programmatic = true;    ///< programmatic edges lowered as such (programmatic_edges)
  unsigned max_streams = 0;    ///< the streams backend's lanes at most (0: its own choice)
  bool device_launch = false;  ///< the graph backend's graph may be launched from the device

  static CudaLowering of(const CompileOptions& options) noexcept {
    return {options.profile_every, options.programmatic_edges, options.max_streams,
            options.device_launch};
  }
};

/// The values a CUDA executable starts from: its plan's when compiled, its source's (with
/// their updates) when cloned; and which of their words point into transients.
struct StartingValues {
  ExecutableValues args;
  TransientBinding transients;

  static StartingValues of(const Plan& plan) {
    return {ExecutableValues(plan.values), TransientBinding(plan)};
  }
};

class CudaExecutable : public ExecutableImpl {
 public:
  /// Counts the plan's prioritised commands into `stats`.
  CudaExecutable(std::shared_ptr<const Plan> plan, Device device, ExecutableStats stats,
                 const CudaLowering& lowering);
  ~CudaExecutable() override { wait_for_launches(); }

  Fence launch(const std::shared_ptr<QueueState>& queue, const SubmitInfo& info) final;
  void check_memory(std::uint32_t c, const MemoryRange& r) const final;

 protected:
  /// Enqueues one run on `queue`'s stream, after the submission's waits. `previous`: the queue
  /// of this executable's previous launch when that was another one (the run must follow it).
  virtual void enqueue(CudaQueue& queue, CudaQueue* previous) = 0;
  void check_runs(const Plan& plan) const override;
  void check_values(const Plan& plan, std::span<const std::uint32_t> commands,
                    const Plan& root) const override;

  /// Launches from now on report errors through `context`, numbered from 0 again; no launch
  /// through it has been profiled yet.
  void start_context(std::shared_ptr<const LaunchContext> context);
  /// Under mutex(): work submitted to `queue` from now on may use this executable as its
  /// launches do (kernels launch it from the device): it follows the previous launch's queue,
  /// and the destructor waits for `queue`.
  void follow_queue(const std::shared_ptr<QueueState>& queue);
  /// Keeps `keep` alive until every launch so far has finished.
  void retire(std::shared_ptr<const void> keep);
  /// Takes `plan` in place of the current one, which lives on (with the communicators its
  /// collectives use) until every launch so far has finished.
  void replace_plan_after_launches(std::shared_ptr<const Plan> plan) {
    if (lowered_plan() != shared_plan()) retire(lowered_plan());
    retire(shared_plan());
    replace_plan(std::move(plan));
  }

  /// Waits for the launches in flight: their host callbacks and parameters point into the
  /// derived executable, so its destructor calls this first (its members die before ours).
  void wait_for_launches() noexcept;

  int ordinal() const noexcept { return device().ordinal(); }
  const CudaLowering& lowering() const noexcept { return lowering_; }
  std::mutex& mutex() const noexcept { return mutex_; }
  /// Under mutex(): launches through the current context (during enqueue, the number of the
  /// one being enqueued, as its host tasks count it).
  std::uint64_t launches() const noexcept { return launches_; }
  /// During enqueue: the launch being enqueued.
  const LaunchNumber& current_launch() const noexcept { return current_; }
  /// Under mutex(): the most recent profiled launch (nullopt: none yet), when launch() began
  /// enqueuing it and when it had.
  const std::optional<LaunchNumber>& last_profiled() const noexcept { return last_profiled_; }
  std::chrono::steady_clock::time_point last_started() const noexcept { return last_started_; }
  std::chrono::steady_clock::time_point last_enqueued() const noexcept { return last_enqueued_; }

 private:
  // Under mutex_: makes `queue` the one the destructor waits for; the previous one, when it
  // was another and is alive.
  std::shared_ptr<QueueState> take_queue(const std::shared_ptr<QueueState>& queue);

  CudaLowering lowering_;
  mutable std::mutex mutex_;
  std::shared_ptr<const LaunchContext> context_;
  std::weak_ptr<QueueState> last_queue_;
  const QueueState* last_queue_address_ = nullptr;  // last_queue_'s, compared while it lives
  std::uint64_t launches_ = 0;
  LaunchNumber current_;
  std::optional<LaunchNumber> last_profiled_;
  std::chrono::steady_clock::time_point last_started_, last_enqueued_;
};

}  // namespace cmdgraph::detail
