// LaunchCompletion: lazily recorded events, fault messages, host task errors; launch contexts.
#include "backend/cuda_launch/launch_fence.hpp"

#include "cuda/check.hpp"
#include "cuda/stream_ops.hpp"

#include <cmdgraph/error.hpp>

#include <exception>
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
  if (device_status != cudaSuccess) return fault(device_status);
  return host_errors ? host_errors->find(first, last) : nullptr;
}

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
    {
      std::lock_guard lock(mutex_);
      if (finished_) return true;
      event = event_.get();
    }
    if (!event) return false;  // not marked: cannot be queried yet
    const cudaError_t s = cuda::query_event(event);
    if (s == cudaErrorNotReady) return false;
    std::lock_guard lock(mutex_);
    settle(s);
    return true;
  }
  void synchronize() override {
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
  std::exception_ptr error() override {
    std::lock_guard lock(mutex_);
    if (status_ != cudaSuccess) {
      cuda::clear_error();
      return context_->fault(status_);
    }
    return context_->host_errors ? context_->host_errors->find(launch_) : nullptr;
  }

 private:
  void settle(cudaError_t status) {
    finished_ = true;
    if (status_ == cudaSuccess) status_ = status;
  }

  std::shared_ptr<const LaunchContext> context_;
  std::uint64_t launch_;
  std::mutex mutex_;
  cuda::Event event_;
  bool finished_ = false;
  cudaError_t status_ = cudaSuccess;
};

// A launch's fence and its completion in one allocation: launch() makes one per call.
class LaunchFence final : public FenceState {
 public:
  LaunchFence(const std::shared_ptr<const LaunchContext>& context, std::uint64_t launch,
              const std::shared_ptr<QueueState>& queue)
      : FenceState(&completion_, queue), completion_(context, launch) {}

 private:
  LaunchCompletion completion_;
};

}  // namespace

std::shared_ptr<FenceState> launch_fence(const std::shared_ptr<const LaunchContext>& context,
                                         std::uint64_t launch,
                                         const std::shared_ptr<QueueState>& queue) {
  return std::make_shared<LaunchFence>(context, launch, queue);
}

std::shared_ptr<LaunchContext> launch_context(const Plan& plan, int device,
                                              std::shared_ptr<HostErrors> host_errors,
                                              std::shared_ptr<EventPool> events) {
  auto context = std::make_shared<LaunchContext>();
  context->executable = plan.buffer_name;
  context->device = device;
  context->suspects = device_code_commands(plan);
  context->host_errors = std::move(host_errors);
  context->events = std::move(events);
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
