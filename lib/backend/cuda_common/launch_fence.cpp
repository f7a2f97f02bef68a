// LaunchCompletion: event queries, fault messages, host task errors.
#include "backend/cuda_common/launch_fence.hpp"

#include "cuda/check.hpp"

#include <cmdgraph/error.hpp>

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

namespace {

class LaunchCompletion final : public DeviceCompletion {
 public:
  LaunchCompletion(cuda::Event event, std::shared_ptr<const LaunchContext> context,
                   std::uint64_t launch)
      : event_(std::move(event)), context_(std::move(context)), launch_(launch) {}
  ~LaunchCompletion() override { context_->events->give(std::move(event_)); }

  bool query() override {
    const cudaError_t s = cuda::try_call([&] { return cudaEventQuery(event_.get()); });
    if (s == cudaErrorNotReady) return false;
    settle(s);
    return true;
  }
  void synchronize() override {
    settle(cuda::try_call([&] { return cudaEventSynchronize(event_.get()); }));
  }
  std::exception_ptr error() override {
    std::lock_guard lock(mutex_);
    if (status_ != cudaSuccess) return fault();
    return context_->host_errors ? context_->host_errors->find(launch_) : nullptr;
  }

 private:
  void settle(cudaError_t status) {
    std::lock_guard lock(mutex_);
    if (status_ == cudaSuccess) status_ = status;
  }
  // A device fault does not say which kernel caused it: name every command running device
  // code in this executable (with one such command, that is exact).
  std::exception_ptr fault() const {
    (void)cudaGetLastError();
    std::string list;
    for (const auto& s : context_->suspects) list += (list.empty() ? "'" : ", '") + s + "'";
    return std::make_exception_ptr(Error(
        errc::cuda_error,
        "the launch of '" + context_->executable + "' on cuda:" + std::to_string(context_->device) +
            " failed: " + cudaGetErrorName(status_) + " (" + cudaGetErrorString(status_) + ")" +
            (list.empty() ? "" : "; device code that may have faulted: " + list),
        context_->suspects, static_cast<int>(status_)));
  }

  cuda::Event event_;
  std::shared_ptr<const LaunchContext> context_;
  std::uint64_t launch_;
  std::mutex mutex_;
  cudaError_t status_ = cudaSuccess;
};

}  // namespace

std::shared_ptr<FenceState> fence_after_launch(cudaStream_t stream,
                                               std::shared_ptr<const LaunchContext> context,
                                               std::uint64_t launch) {
  cuda::Event event = context->events->take();
  CMDGRAPH_CUDA(cuda::no_command, cudaEventRecord, event.get(), stream);
  return std::make_shared<FenceState>(
      std::make_unique<LaunchCompletion>(std::move(event), std::move(context), launch));
}

}  // namespace cmdgraph::detail
