// QueueState's host lane, and the public Queue.
#include "run/queue_state.hpp"

#include "run/fence_state.hpp"
#include "run/poll.hpp"
#include "run/thread_pool.hpp"

#if CMDGRAPH_HAVE_CUDA
#include "cuda/check.hpp"
#include "cuda/runtime.hpp"
#endif


#include <cmdgraph/error.hpp>

#include <utility>
#include <exception>

namespace cmdgraph {
namespace detail {

namespace {
#if CMDGRAPH_HAVE_CUDA
// Low is the device's least urgent priority, high its most urgent, normal half way.
int stream_priority(int device, Priority priority) {
  const auto [least, greatest] = cuda::priority_range(device);
  switch (priority) {
    case Priority::low: return least;
    case Priority::high: return greatest;
    case Priority::normal: break;
  }
  return (least + greatest) / 2;
}
#endif
}  // namespace

QueueState::QueueState(Device device, Priority priority) : device_(device), priority_(priority) {
#if CMDGRAPH_HAVE_CUDA
  if (device.is_cuda()) {
    native_priority_ = stream_priority(device.ordinal(), priority);
    stream_ = cuda::create_stream(device.ordinal(), native_priority_);
  }
#endif
}

QueueState::~QueueState() {
#if CMDGRAPH_HAVE_CUDA
  if (stream_) (void)cuda::try_call([&] { return cudaStreamSynchronize(stream_.get()); });
#endif
  std::unique_lock lock(mutex_);
  idle_.wait(lock, [&] { return !running_; });
}

NativeStream QueueState::stream() const noexcept {
#if CMDGRAPH_HAVE_CUDA
  return stream_.get();
#else
  return nullptr;
#endif
}

void QueueState::track(std::shared_ptr<FenceState> fence) {
  std::lock_guard lock(mutex_);
  // Bound the list between waits: finished launches without errors need no reporting.
  if (tracked_.size() >= 1024) {
    std::erase_if(tracked_, [](const auto& f) { return f->done() && !f->error(); });
  }
  tracked_.push_back(std::move(fence));
}

std::exception_ptr QueueState::take_device_error() {
  std::vector<std::shared_ptr<FenceState>> fences;
  {
    std::lock_guard lock(mutex_);
    fences.swap(tracked_);
  }
  for (auto& f : fences) {
    f->wait();
    if (auto e = f->error()) return e;
  }
  return nullptr;
}

void QueueState::submit(Job job) {
  {
    std::lock_guard lock(mutex_);
    if (running_) {
      pending_.push_back(std::move(job));
      return;
    }
    running_ = true;
  }
  start(std::move(job));
}

void QueueState::start(Job job) {
  // The job runs on this thread until it hands its work to the pool; `done` may be called
  // from anywhere, even before job() returns.
  job([this](std::exception_ptr error) { finished(std::move(error)); });
}

void QueueState::finished(std::exception_ptr error) {
  Job next;
  {
    std::lock_guard lock(mutex_);
    if (error && !first_error_) first_error_ = error;
    if (pending_.empty()) {
      running_ = false;
      idle_.notify_all();
      return;
    }
    next = std::move(pending_.front());
    pending_.pop_front();
  }
  // Start the next job from the pool, not from inside this one's completion: a run of jobs
  // that finish at once must not nest on the stack.
  host_pool().post([this, next = std::move(next)]() mutable { start(std::move(next)); });
}

void QueueState::rethrow_pending_error(std::unique_lock<std::mutex>& lock) {
  if (auto e = std::exchange(first_error_, nullptr)) {
    lock.unlock();
    std::rethrow_exception(e);
  }
}

void QueueState::wait() {
#if CMDGRAPH_HAVE_CUDA
  if (stream_) {
    const cudaError_t status = cuda::try_call([&] { return cudaStreamSynchronize(stream_.get()); });
    if (auto e = take_device_error()) std::rethrow_exception(e);
    if (status != cudaSuccess) cuda::fail(status, "cudaStreamSynchronize", {});
    return;
  }
#endif
  std::unique_lock lock(mutex_);
  idle_.wait(lock, [&] { return !running_; });
  rethrow_pending_error(lock);
}

bool QueueState::wait_for(std::chrono::nanoseconds timeout) {
#if CMDGRAPH_HAVE_CUDA
  if (stream_) {
    const bool idle = poll_until(std::chrono::steady_clock::now() + timeout, [&] {
      return cuda::try_call([&] { return cudaStreamQuery(stream_.get()); }) != cudaErrorNotReady;
    });
    if (!idle) return false;
    wait();
    return true;
  }
#endif
  std::unique_lock lock(mutex_);
  if (!idle_.wait_for(lock, timeout, [&] { return !running_; })) return false;
  rethrow_pending_error(lock);
  return true;
}

}  // namespace detail

Queue::Queue(Device device, Priority priority)
    : state_(std::make_shared<detail::QueueState>(device, priority)) {}
Queue::Queue(Queue&&) noexcept = default;
Queue& Queue::operator=(Queue&&) noexcept = default;
Queue::~Queue() = default;

detail::QueueState& Queue::state() const {
  if (!state_) throw Error(errc::invalid_handle, "a moved-from queue was used");
  return *state_;
}

Device Queue::device() const noexcept { return state_ ? state_->device() : Device::host(); }
void Queue::wait() { state().wait(); }
bool Queue::wait_for(std::chrono::nanoseconds timeout) { return state().wait_for(timeout); }
NativeStream Queue::native_handle() const noexcept { return state_ ? state_->stream() : nullptr; }

}  // namespace cmdgraph
