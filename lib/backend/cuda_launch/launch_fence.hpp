// The fence of one CUDA launch: a completion event borrowed from a pool and recorded only when
// the queue decides someone needs it, plus what turns the launch's end into an error: a
// device fault (naming the commands that run device code), a host task's exception, or a
// communicator that failed (waits on launches with collectives poll their communicators).
#pragma once

#include "backend/cuda_commands/host_callbacks.hpp"
#include "cuda/handles.hpp"
#include "plan/plan.hpp"
#include "sync/cuda_queue.hpp"
#include "sync/fence_state.hpp"

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace cmdgraph::detail {

class CommunicatorState;

/// Completion events of one executable, reused across launches.
class EventPool {
 public:
  explicit EventPool(int device) : device_(device) {}
  cuda::Event take();
  void give(cuda::Event event) noexcept;

 private:
  int device_;
  std::mutex mutex_;
  std::vector<cuda::Event> free_;
};

/// The communicators an executable's collectives use, with the names of those collectives.
struct PeerGroup {
  std::shared_ptr<CommunicatorState> comm;
  std::vector<std::string> collectives;
};

/// What the launches of one executable instance report errors with.
struct LaunchContext final : LaunchErrors {
  std::string executable;
  int device = 0;
  std::vector<std::string> suspects;  // commands running device code
  std::shared_ptr<HostErrors> host_errors;
  std::shared_ptr<EventPool> events;
  std::vector<PeerGroup> peers;       // empty unless the plan holds collectives

  std::exception_ptr first_error(std::uint64_t first, std::uint64_t last,
                                 int device_status) const override;
  /// The error of a device fault with `status`, naming the suspects.
  std::exception_ptr fault(int status) const;

  bool watches_peers() const override { return !peers.empty(); }
  /// Asks each communicator for an asynchronous error, and whether the wait that began at
  /// `waiting_since` has passed its timeout; on either it is aborted (see CommunicatorState).
  std::exception_ptr check_alive(
      std::chrono::steady_clock::time_point waiting_since) const override;
  /// The error of the first communicator that was aborted, naming the collectives using it;
  /// null while all are healthy. Launches that finish after it failed report it.
  std::exception_ptr peer_failure() const;
  /// Throws Error(nccl_error) when a communicator was aborted: nothing may launch on it.
  void require_peers() const;
};

/// The fence of launch number `launch` just enqueued on `queue` (not marked yet): `unheld`
/// renumbered when it is a fence of the same context that `queue` gave up
/// (CudaQueue::Submission::take_unheld), else a new one.
std::shared_ptr<FenceState> launch_fence(const std::shared_ptr<const LaunchContext>& context,
                                         std::uint64_t launch,
                                         const std::shared_ptr<QueueState>& queue,
                                         std::shared_ptr<FenceState> unheld);

/// What the launches of one instance of `plan` on `device` report errors with.
std::shared_ptr<LaunchContext> launch_context(const Plan& plan, int device,
                                              std::shared_ptr<HostErrors> host_errors,
                                              std::shared_ptr<EventPool> events);

/// Names of the commands that run device code (kernels, parallel_for, captures, loops), those
/// of bodies qualified: the suspects when a launch faults.
std::vector<std::string> device_code_commands(const Plan& plan);

}  // namespace cmdgraph::detail
