// LaunchCompletion: lazily recorded events, fault messages, host task errors, failed
// communicators; launch contexts.
#include "backend/cuda_launch/launch_fence.hpp"

#include "cuda/check.hpp"
#include "cuda/stream_ops.hpp"
#include "sync/poll.hpp"

#include <cmdgraph/config.hpp>
#if CMDGRAPH_HAVE_NCCL
#include "collective/communicator_state.hpp"
#endif

#include <cmdgraph/error.hpp>

#include <algorithm>
#include <exception>
#include <optional>
#include <typeinfo>
#include <utility>

namespace cmdgraph::detail {

cuda::Event EventPool::take() {
  {
    std::lock_guard lock(mutex_);
    if (!free_.empty()) {
      cuda::Event e = std::move(free_.back());
      free_.pop_back();
      return e;
    }
  }
  return cuda::create_event(device_, false);
}

void EventPool::give(cuda::Event event) noexcept {
  try {
    std::lock_guard lock(mutex_);
    free_.push_back(std::move(event));
  } catch (...) {
    // Out of memory for the pool's list: the event is simply destroyed.
  }
}

std::exception_ptr LaunchContext::fault(int status) const {
  // A device fault does not say which kernel caused it: name every command running device
  // code in this executable (with one such command, that is exact).
  const auto s = static_cast<cudaError_t>(status);
  std::string list;
  for (const auto& name : suspects) list += (list.empty() ? "'" : ", '") + name + "'";
  return std::make_exception_ptr(Error(
      errc::cuda_error,
      "the launch of '" + executable + "' on cuda:" + std::to_string(device) + " failed: " +
          cuda::describe(s) +
          (list.empty() ? "" : "; device code that may have faulted: " + list),
      suspects, status));
}

std::exception_ptr LaunchContext::first_error(std::uint64_t first, std::uint64_t last,
                                              int device_status) const {
  if (auto e = peer_failure()) return e;  // what a failed peer left behind is void
  if (device_status != cudaSuccess) return fault(device_status);
  return host_errors ? host_errors->find(first, last) : nullptr;
}

#if CMDGRAPH_HAVE_NCCL

namespace {
std::exception_ptr peer_error(const LaunchContext& context, const PeerGroup& group,
                              const CommunicatorFailure& failure) {
  std::string list;
  for (const auto& name : group.collectives) list += (list.empty() ? "'" : ", '") + name + "'";
  return std::make_exception_ptr(Error(
      failure.code,
      "the launch of '" + context.executable + "' on cuda:" + std::to_string(context.device) +
          " failed: communicator " + group.comm->describe() + " " + failure.why +
          "; cmdgraph aborted it (its collectives here: " + list + ")",
      group.collectives, failure.status));
}
}  // namespace

std::exception_ptr LaunchContext::check_alive(
    std::chrono::steady_clock::time_point waiting_since) const {
  for (const PeerGroup& g : peers) {
    if (const auto failure = g.comm->check(waiting_since)) return peer_error(*this, g, *failure);
  }
  return nullptr;
}

std::exception_ptr LaunchContext::peer_failure() const {
  for (const PeerGroup& g : peers) {
    if (const auto failure = g.comm->failure()) return peer_error(*this, g, *failure);
  }
  return nullptr;
}

void LaunchContext::require_peers() const {
  for (const PeerGroup& g : peers) {
    if (const auto failure = g.comm->failure()) {
      throw Error(errc::nccl_error,
                  "executable '" + executable + "' cannot launch: cmdgraph aborted communicator " +
                      g.comm->describe() + " after it " + failure->why,
                  g.collectives, failure->status);
    }
  }
}

#else

std::exception_ptr LaunchContext::check_alive(std::chrono::steady_clock::time_point) const {
  return nullptr;
}
std::exception_ptr LaunchContext::peer_failure() const { return nullptr; }
void LaunchContext::require_peers() const {}

#endif

namespace {

class LaunchCompletion final : public DeviceCompletion {
 public:
  LaunchCompletion(std::shared_ptr<const LaunchContext> context, std::uint64_t launch)
      : context_(std::move(context)), launch_(launch) {}
  ~LaunchCompletion() override {
    if (event_) context_->events->give(std::move(event_));
  }

  void mark(NativeStream stream) override {
    std::lock_guard lock(mutex_);
    if (finished_ || event_) return;
    try {
      event_ = context_->events->take();
    } catch (const Error& e) {
      settle(static_cast<cudaError_t>(e.cuda_status()));
      return;
    }
    try {
      cuda::record_event(event_.get(), stream, cuda::no_command);
    } catch (const Error& e) {
      settle(static_cast<cudaError_t>(e.cuda_status()));
    }
  }
  void mark_finished(int status) override {
    std::lock_guard lock(mutex_);
    settle(static_cast<cudaError_t>(status));
  }
  bool query() override {
    cudaEvent_t event = nullptr;
    std::chrono::steady_clock::time_point since;
    {
      std::lock_guard lock(mutex_);
      if (finished_) return true;
      event = event_.get();
      if (!waiting_since_) waiting_since_ = std::chrono::steady_clock::now();
      since = *waiting_since_;
    }
    if (!event) return false;  // not marked: cannot be queried yet
    cudaError_t s = cuda::query_event(event);
    if (s == cudaErrorNotReady) {
      if (context_->peers.empty() || !context_->check_alive(since)) return false;
      // A communicator failed and was aborted, which ends its kernels: the launch ends too.
      s = cuda::synchronize_event(event);
    }
    std::lock_guard lock(mutex_);
    settle(s);
    return true;
  }
  void synchronize() override {
    if (!context_->peers.empty()) {
      // Collectives may wait for peers forever: poll, watching the communicators.
      poll_until(std::chrono::steady_clock::time_point::max(), [&] { return query(); });
      return;
    }
    cudaEvent_t event = nullptr;
    {
      std::lock_guard lock(mutex_);
      if (finished_) return;
      event = event_.get();
    }
    const cudaError_t s = cuda::synchronize_event(event);
    std::lock_guard lock(mutex_);
    settle(s);
  }
  const std::shared_ptr<const LaunchContext>& context() const noexcept { return context_; }
  /// Launch `launch`'s completion now. Its queue gave it up unmarked, so there is no event;
  /// that queue's lock, held by the caller, was held by whatever finished it.
  void renumber(std::uint64_t launch) noexcept {
    launch_ = launch;
    finished_ = false;
    status_ = cudaSuccess;
    waiting_since_.reset();
    peer_error_ = nullptr;
  }

  std::exception_ptr error() override {
    std::lock_guard lock(mutex_);
    if (peer_error_) return peer_error_;
    if (status_ != cudaSuccess) {
      cuda::clear_error();
      return context_->fault(status_);
    }
    return context_->host_errors ? context_->host_errors->find(launch_) : nullptr;
  }

 private:
  void settle(cudaError_t status) {
    if (!finished_ && !context_->peers.empty()) peer_error_ = context_->peer_failure();
    finished_ = true;
    if (status_ == cudaSuccess) status_ = status;
  }

  std::shared_ptr<const LaunchContext> context_;
  std::uint64_t launch_;
  std::mutex mutex_;
  cuda::Event event_;
  bool finished_ = false;
  cudaError_t status_ = cudaSuccess;
  std::optional<std::chrono::steady_clock::time_point> waiting_since_;  // first seen unfinished
  std::exception_ptr peer_error_;  // a communicator that failed before the launch was seen done
};

// A launch's fence and its completion in one allocation.
class LaunchFence final : public FenceState {
 public:
  LaunchFence(const std::shared_ptr<const LaunchContext>& context, std::uint64_t launch,
              const std::shared_ptr<QueueState>& queue)
      : FenceState(&completion_, queue), completion_(context, launch) {}

  bool serves(const std::shared_ptr<const LaunchContext>& context) const noexcept {
    return completion_.context() == context;
  }
  /// The fence of launch `launch` now, on the same queue. Only for a fence its queue gave up
  /// as unheld: nobody asked it anything, so only the completion's numbers changed.
  void renumber(std::uint64_t launch) noexcept { completion_.renumber(launch); }

 private:
  LaunchCompletion completion_;
};

}  // namespace

std::shared_ptr<FenceState> launch_fence(const std::shared_ptr<const LaunchContext>& context,
                                         std::uint64_t launch,
                                         const std::shared_ptr<QueueState>& queue,
                                         std::shared_ptr<FenceState> unheld) {
  // A CUDA queue holds launch fences only; typeid of a class of this file is a pointer compare.
  if (unheld && typeid(*unheld) == typeid(LaunchFence)) {
    auto& fence = static_cast<LaunchFence&>(*unheld);
    if (fence.serves(context)) {
      fence.renumber(launch);
      return unheld;
    }
  }
  return std::make_shared<LaunchFence>(context, launch, queue);
}

namespace {
void collect_peers(const Plan& plan, const Plan& root, std::vector<PeerGroup>& out) {
  for (std::uint32_t c = 0; c < plan.size(); ++c) {
    if (auto comm = communicator(plan.payload(c))) {
      auto group = std::find_if(out.begin(), out.end(),
                                [&](const PeerGroup& g) { return g.comm == comm; });
      if (group == out.end()) group = out.insert(out.end(), PeerGroup{std::move(comm), {}});
      group->collectives.push_back(command_label(plan, c, root));
    }
    for (const auto& body : plan.bodies_of(c)) collect_peers(*body, root, out);
  }
}
}  // namespace

std::shared_ptr<LaunchContext> launch_context(const Plan& plan, int device,
                                              std::shared_ptr<HostErrors> host_errors,
                                              std::shared_ptr<EventPool> events) {
  auto context = std::make_shared<LaunchContext>();
  context->executable = plan.buffer_name;
  context->device = device;
  context->suspects = device_code_commands(plan);
  context->host_errors = std::move(host_errors);
  context->events = std::move(events);
  collect_peers(plan, plan, context->peers);
  return context;
}

namespace {
void collect_device_code(const Plan& plan, const Plan& root, std::vector<std::string>& out) {
  for (std::uint32_t c = 0; c < plan.size(); ++c) {
    if (traits(plan.kind(c)).runs_device_code) out.push_back(command_label(plan, c, root));
    for (const auto& body : plan.bodies_of(c)) collect_device_code(*body, root, out);
  }
}
}  // namespace

std::vector<std::string> device_code_commands(const Plan& plan) {
  std::vector<std::string> out;
  collect_device_code(plan, plan, out);
  return out;
}

}  // namespace cmdgraph::detail
