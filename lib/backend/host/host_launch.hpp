// HostLaunch: one run of a flat plan on the host pool. Tasks become ready when their last
// parent finishes; a ready child continues on the same thread, the others go to the pool.
// A failed task's dependants are skipped (a skipped event record still ends the generation
// begun for it, so waits for it end); the first error completes the launch's fence.
#pragma once

#include "backend/dispatch_reports.hpp"
#include "backend/host/host_commands.hpp"
#include "plan/flat_plan.hpp"
#include "sync/fence_state.hpp"
#include "sync/host_queue.hpp"

#include <cmdgraph/profile.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace cmdgraph::detail {

/// What every launch of one host executable (and its clones) shares.
struct HostProgram {
  std::shared_ptr<const Plan> plan;
  FlatPlan flat;
  // Per task: how errors, traces and NVTX name it; shared with the program it replaced when
  // they name the same.
  std::shared_ptr<const TaskLabels> labels;
  // Per task: the bodies of a conditional command, run as its condition decides.
  std::vector<std::vector<std::shared_ptr<const HostProgram>>> bodies;
  // The clamps of the indirect commands, one set shared by the root and its bodies.
  std::shared_ptr<const DispatchReports> reports;
};

/// The event generations a launch's record and wait commands use, fixed when it is submitted
/// (per task; 0 for other tasks): a record finishes the generation it began at submission, a
/// wait waits for the latest record submitted before its launch. Empty for the runs of a
/// conditional command's bodies, whose records and waits act as they run.
using EventGenerations = std::vector<std::uint64_t>;

/// Ends one host launch exactly once, whichever path gets there first (its last task, or a
/// failure while starting it): signals the fence, then tells the queue.
class LaunchEnd {
 public:
  LaunchEnd(std::shared_ptr<FenceState> fence, HostQueue::Done done)
      : fence_(std::move(fence)), done_(std::move(done)) {}
  void operator()(std::exception_ptr error) {
    if (ended_.exchange(true)) return;
    done_(error, fence_.get());  // the queue completes the fence as it moves on
  }

 private:
  std::shared_ptr<FenceState> fence_;
  HostQueue::Done done_;
  std::atomic<bool> ended_{false};
};

/// The last profile of a profiled host executable.
struct HostProfileStore {
  std::mutex mutex;
  std::optional<Profile> last;
};

class HostLaunch : public std::enable_shared_from_this<HostLaunch> {
 public:
  /// Called once, with the first error or null, when the launch is over.
  using End = std::function<void(std::exception_ptr)>;
  /// `before_complete` runs when every task has finished, before `end` (the submission's
  /// semaphore signals). With `profile`, its Profile is stored there as launch `index`.
  HostLaunch(std::shared_ptr<const HostProgram> program,
             std::shared_ptr<const ArgumentStore> arguments, EventGenerations generations,
             End end, std::function<void()> before_complete,
             std::shared_ptr<HostProfileStore> profile, std::uint64_t index = 0);
  /// Posts the source tasks; returns at once.
  void start();

  // For the commands' runs (host_commands.cpp).
  /// Runs `host` over [0, `count`) with the functor in slot `functor` of the task's values.
  HostOutcome run_parallel_for(std::uint32_t task, HostInvoke host, ArgumentStore::Slot functor,
                               std::size_t count);
  /// Counts a run of indirect task `task` that asked for `asked`, clamped or not.
  void note_dispatch(std::uint32_t task, std::uint64_t asked, bool clamped) const;
  /// Runs the body of conditional task `task` that `condition`'s value picks (`branching`),
  /// again while it picks one when `branching` repeats: each pass a launch of its own, the
  /// condition evaluated on the host before it.
  HostOutcome run_conditional(std::uint32_t task, const Condition& condition,
                              Branching branching);
  void record_event(std::uint32_t task, EventState& event);
  HostOutcome wait_for_event(std::uint32_t task, EventState& event);
  /// Ends task `task` once `ready()` is true: at once, else from the watcher's polls (no pool
  /// thread waits). `ready` must not block.
  HostOutcome wait_until(std::uint32_t task, std::function<bool()> ready);
  /// Files the exception being handled as the launch's error, naming the task.
  void fail(std::uint32_t task, const char* what_ran);

 private:
  static constexpr std::uint32_t none = ~0u;

  void post(std::uint32_t task);
  void run(std::uint32_t task);
  HostOutcome execute(std::uint32_t task);
  /// Task `task` is skipped: if it records an event, ends the generation its launch began for
  /// it (waits for that record would otherwise never end).
  void end_skipped_record(std::uint32_t task);
  void run_chunk(std::uint32_t task, HostInvoke host, ArgumentStore::Slot functor,
                 std::size_t begin, std::size_t end);
  /// The body of task `task` its condition picks now, if any; throws what the condition
  /// throws.
  std::optional<std::uint32_t> choose(std::uint32_t task, const Condition& condition,
                                      Branching branching) const;
  /// Runs body `body` of task `task` once, as a launch of its own; then chooses again if
  /// `branching` repeats.
  void start_pass(std::uint32_t task, std::uint32_t body, const Condition& condition,
                  Branching branching);
  void after_pass(std::uint32_t task, const Condition& condition, Branching branching,
                  std::exception_ptr error);
  /// Marks `task` finished; returns one ready child to continue with, posting the others.
  std::uint32_t complete(std::uint32_t task, bool failed);
  void resume_after(std::uint32_t task, bool failed);
  void keep_first_error(std::exception_ptr error);
  void finish();
  void store_profile();
  const ArgumentStore& arguments_of(const FlatTask& task) const;

  std::shared_ptr<const HostProgram> program_;
  std::shared_ptr<const ArgumentStore> arguments_;
  EventGenerations generations_;
  End end_;
  std::function<void()> before_complete_;
  std::shared_ptr<HostProfileStore> profile_;  // null when not profiling
  std::uint64_t index_;                        // the executable's launch number
  std::size_t pool_size_;
  std::chrono::steady_clock::time_point started_;
  std::unique_ptr<double[]> start_ms_, end_ms_;  // per task, when profiling

  std::unique_ptr<std::atomic<std::uint32_t>[]> pending_;  // unfinished parents
  std::unique_ptr<std::atomic<std::uint8_t>[]> poisoned_;  // a parent failed or was skipped
  std::unique_ptr<std::atomic<std::uint32_t>[]> chunks_;   // parallel_for chunks left
  std::unique_ptr<std::atomic<std::uint8_t>[]> failed_;    // a parallel_for chunk threw
  std::atomic<std::size_t> remaining_;

  std::mutex error_mutex_;
  std::exception_ptr error_;
};

}  // namespace cmdgraph::detail
