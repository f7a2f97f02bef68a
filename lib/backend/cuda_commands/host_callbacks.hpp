// Host tasks on CUDA backends: each runs on CUDA's callback thread through a trampoline that
// catches its exception and files it under the launch it belongs to, for that launch's fence,
// and skips a task whose nearest host-task ancestors failed or were skipped in that launch, so
// a failed host task's dependant host tasks are skipped as on the host backend.
#pragma once

#include "plan/plan.hpp"

#include <cmdgraph/detail/specs.hpp>

#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>
#include <atomic>

namespace cmdgraph::detail {

/// Errors of host tasks, by launch. Launches of one executable are serialized and each runs
/// every host task exactly once, so the k-th execution of any task belongs to launch
/// k / tasks_per_launch.
class HostErrors {
 public:
  explicit HostErrors(std::uint32_t tasks_per_launch) : per_launch_(tasks_per_launch) {}
  /// Called as a task starts: the launch it belongs to.
  std::uint64_t enter() noexcept {
    return executions_.fetch_add(1, std::memory_order_relaxed) / per_launch_;
  }
  void record(std::uint64_t launch, std::exception_ptr error);
  /// The first error of `launch`, kept for later takers.
  std::exception_ptr find(std::uint64_t launch);
  /// The first error of launches [first, last].
  std::exception_ptr find(std::uint64_t first, std::uint64_t last);
  /// Forgets the errors of launches before `launch` (their fences have all been released).
  void forget_before(std::uint64_t launch);

 private:
  std::uint32_t per_launch_;
  std::atomic<std::uint64_t> executions_{0};
  std::mutex mutex_;
  std::map<std::uint64_t, std::exception_ptr> errors_;
};

struct HostCallback;
/// One timed run of a host task (CUPTI profile mode): when it started and ended on the steady
/// clock (ns since its epoch), and the launch it belonged to (written last).
struct HostTimes {
  std::atomic<std::int64_t> started_ns{0}, ended_ns{0};
  std::atomic<std::uint64_t> timed_in{~std::uint64_t{0}};
};
/// The host tasks a command follows with no other host task between (shared between commands
/// where they are the same); null for none.
using HostAncestors = std::shared_ptr<const std::vector<HostCallback*>>;
/// The union of several commands' nearest host ancestors (one of them, shared, when the others
/// add nothing).
HostAncestors merged(const std::vector<HostAncestors>& sets);
/// `callback` alone.
HostAncestors only(HostCallback* callback);

/// One host task as CUDA sees it: the userData of a host node or cudaLaunchHostFunc.
struct HostCallback {
  std::shared_ptr<HostTask> task;
  std::string name;
  HostErrors* errors;
  HostAncestors ancestors;  // a failure of one of these in a launch skips this task there
  /// The last launch in which this task failed or was skipped (none: max).
  std::atomic<std::uint64_t> failed_in{~std::uint64_t{0}};
  /// CUPTI profile mode: the launch (counted as `errors` counts them) whose run of the task to
  /// time, set by the executable before it enqueues that launch, and where that run's times
  /// go; both null when not timed.
  const std::atomic<std::uint64_t>* time_launch = nullptr;
  HostTimes* times = nullptr;
};

/// Host tasks in `plan` and every body it runs, each counted once per execution.
std::uint32_t count_host_tasks(const Plan& plan);

/// The trampoline, with CUDA's host function signature.
void run_host_callback(void* callback);

/// Owns the callbacks of one lowering; their addresses are baked into graphs and streams, so
/// they never move.
class HostCallbacks {
 public:
  HostCallback* add(std::shared_ptr<HostTask> task, std::string name, HostErrors* errors,
                    HostAncestors ancestors);
  std::size_t size() const noexcept { return callbacks_.size(); }

 private:
  std::vector<std::unique_ptr<HostCallback>> callbacks_;
};

}  // namespace cmdgraph::detail
