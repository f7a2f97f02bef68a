// CudaExecutable: the launch skeleton of both CUDA backends.
#include "backend/cuda_launch/cuda_executable.hpp"

#include "backend/cuda_commands/cuda_commands.hpp"
#include "cuda/handles.hpp"
#include "cuda/runtime.hpp"
#include "cuda/stream_ops.hpp"
#include "sync/access.hpp"

namespace cmdgraph::detail {

std::shared_ptr<DispatchReports> pinned_reports(const Plan& plan) {
  auto reports = std::make_shared<DispatchReports>(plan, [](std::size_t bytes) {
    return std::shared_ptr<void>(cuda::allocate_pinned(bytes), cuda::free_pinned);
  });
  return reports->empty() ? nullptr : reports;  // one walk of the plan either way
}

CudaExecutable::CudaExecutable(std::shared_ptr<const Plan> plan, Device device,
                               ExecutableStats stats, const CudaLowering& lowering)
    : ExecutableImpl(std::move(plan), device, std::move(stats), lowering.profile_every),
      lowering_(lowering) {
  this->stats().commands_prioritised = count_prioritised(this->plan());
}

void CudaExecutable::wait_for_launches() noexcept {
  if (auto queue = last_queue_.lock()) queue->synchronize_quietly();
}

Fence CudaExecutable::launch(const std::shared_ptr<QueueState>& queue, const SubmitInfo& info) {
  CudaQueue& lane = *queue->as_cuda();
  const cuda::ScopedDevice on(ordinal());
  std::lock_guard lock(mutex_);
  context_->require_peers();  // an aborted communicator's resources are gone
  CudaQueue::Submission submission(lane);
  lane.enqueue_semaphore_waits(info);
  // Taken first: whatever part of the run gets enqueued, the next launch follows this queue.
  const std::shared_ptr<QueueState> previous = take_queue(queue);
  current_ = number_launch();
  const auto started = current_.profiled ? std::chrono::steady_clock::now()
                                         : std::chrono::steady_clock::time_point{};
  enqueue(lane, previous ? previous->as_cuda() : nullptr);
  if (current_.profiled) {
    last_started_ = started;
    last_enqueued_ = std::chrono::steady_clock::now();
    last_profiled_ = current_;
  }
  lane.enqueue_semaphore_signals(info);
  const std::uint64_t launch = launches_++;
  std::shared_ptr<FenceState> fence =
      launch_fence(context_, launch, queue, submission.take_unheld());
  submission.commit(fence, context_, launch);
  return Access::fence(std::move(fence));
}

std::shared_ptr<QueueState> CudaExecutable::take_queue(const std::shared_ptr<QueueState>& queue) {
  // Relaunching on the same queue, the usual case, touches no reference count: a live
  // last_queue_ at this address is this queue.
  if (last_queue_address_ == queue.get() && !last_queue_.expired()) return nullptr;
  std::shared_ptr<QueueState> previous = last_queue_.lock();
  last_queue_ = queue;
  last_queue_address_ = queue.get();
  return previous != queue ? previous : nullptr;
}

void CudaExecutable::follow_queue(const std::shared_ptr<QueueState>& queue) {
  const std::shared_ptr<QueueState> previous = take_queue(queue);
  if (!previous) return;
  const cuda::Served served = cuda::for_executable(name());
  const cuda::Event done = cuda::create_event(ordinal(), false, served);
  cuda::record_event(done.get(), previous->as_cuda()->stream(), served);
  cuda::wait_event(queue->as_cuda()->stream(), done.get(), served);
}

void CudaExecutable::check_memory(std::uint32_t c, const MemoryRange& r) const {
  check_device_memory(plan(), c, r, ordinal());
}

void CudaExecutable::check_runs(const Plan& plan) const { check_runs_on_device(plan, ordinal()); }

void CudaExecutable::check_values(const Plan& plan, std::span<const std::uint32_t> commands,
                                  const Plan& root) const {
  check_values_on_device(plan, commands, root, ordinal());
}

void CudaExecutable::start_context(std::shared_ptr<const LaunchContext> context) {
  context_ = std::move(context);
  launches_ = 0;
  last_profiled_.reset();  // what timed it belonged to the instance replaced
}

void CudaExecutable::retire(std::shared_ptr<const void> keep) {
  if (auto queue = last_queue_.lock()) queue->as_cuda()->retire(std::move(keep));
  // Never launched: nothing can be using it.
}

}  // namespace cmdgraph::detail
