// QueueState's host lane, and the public Queue.
#include "sync/queue_state.hpp"

#include "sync/deadline.hpp"
#include "sync/event_state.hpp"
#include "sync/fence_state.hpp"
#include "sync/semaphore_state.hpp"
#include "sync/poll.hpp"
#include "sync/thread_pool.hpp"
#include "sync/watcher.hpp"

#if CMDGRAPH_HAVE_CUDA
#include "cuda/check.hpp"
#include "cuda/driver.hpp"
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

QueueState::QueueState(Device device, int native_priority)
    : device_(device), priority_(Priority::normal) {
#if CMDGRAPH_HAVE_CUDA
  if (device.is_cuda()) {
    const auto [least, greatest] = cuda::priority_range(device.ordinal());
    native_priority_ = std::clamp(native_priority, greatest, least);
    stream_ = cuda::create_stream(device.ordinal(), native_priority_);
  }
#else
  (void)native_priority;
#endif
}

QueueState::~QueueState() {
  const BlockingWait blocking(false);
  synchronize_quietly();
#if CMDGRAPH_HAVE_CUDA
  // Fences still held learn that their work is done; errors stay with their fences.
  if (pending_) pending_->device()->mark_finished(cudaSuccess);
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

QueueState::Submission::Submission(QueueState& queue) : queue_(queue), lock_(queue.mutex_) {
  // use_count 1: only this queue holds the previous fence, so nobody can ever ask for its
  // marker; skip the event.
  if (queue_.pending_ && queue_.pending_.use_count() > 1) {
    queue_.pending_->device()->mark(queue_.stream());
  }
  queue_.pending_.reset();
}

void QueueState::Submission::commit(const std::shared_ptr<FenceState>& fence,
                                    const std::shared_ptr<const LaunchErrors>& errors,
                                    std::uint64_t launch) {
  queue_.pending_ = fence;
  for (LaunchRange& r : queue_.unreported_) {
    if (r.errors == errors) {
      r.first = std::min(r.first, launch);
      r.last = std::max(r.last, launch);
      return;
    }
  }
  queue_.unreported_.push_back({errors, launch, launch});
}

void QueueState::mark(FenceState& fence) {
  std::lock_guard lock(mutex_);
  if (pending_.get() != &fence) return;  // marked already
  fence.device()->mark(stream());
  pending_.reset();
}

void QueueState::enqueue_semaphore_waits(const SubmitInfo& info) {
#if CMDGRAPH_HAVE_CUDA
  for (const SemaphoreValue& w : info.wait) {
    cuda::stream_wait_at_least(stream(), w.semaphore->state()->address(), w.value,
                               "semaphore wait");
  }
#else
  (void)info;
#endif
}

void QueueState::enqueue_semaphore_signals(const SubmitInfo& info) {
#if CMDGRAPH_HAVE_CUDA
  for (const SemaphoreValue& s : info.signal) {
    cuda::stream_write(stream(), s.semaphore->state()->address(), s.value, "semaphore signal");
  }
#else
  (void)info;
#endif
}

void QueueState::wait_event(const std::shared_ptr<EventState>& event) {
#if CMDGRAPH_HAVE_CUDA
  if (stream_) {
    if (!event->device().is_cuda()) {
      throw Error(errc::unsupported, "a CUDA queue cannot wait for an event of the host device");
    }
    Submission submission(*this);  // CUDA events of other devices are fine here
    CMDGRAPH_CUDA(cuda::no_command, cudaStreamWaitEvent, stream(), event->native(), 0u);
    return;
  }
  if (event->device().is_cuda()) {
    // A host lane waiting for a GPU: the watcher polls the event.
    submit([event](Done done) {
      Watcher::instance().watch([event, done] {
        if (cuda::try_call([&] { return cudaEventQuery(event->native()); }) == cudaErrorNotReady) {
          return false;
        }
        done(nullptr);
        return true;
      });
    });
    return;
  }
#endif
  // Host lane: the wait sees the records begun before it.
  const std::uint64_t target = event->latest_begun();
  submit([event, target](Done done) {
    if (event->finished_or_defer(target, [done] { done(nullptr); })) done(nullptr);
  });
}

void QueueState::record_event(const std::shared_ptr<EventState>& event) {
  if (!(event->device() == device_)) {
    throw Error(errc::device_mismatch, "an event of " + event->device().name() +
                                           " cannot be recorded on a queue of " + device_.name());
  }
#if CMDGRAPH_HAVE_CUDA
  if (stream_) {
    Submission submission(*this);
    CMDGRAPH_CUDA(cuda::no_command, cudaEventRecord, event->native(), stream());
    event->note_recorded();
    return;
  }
#endif
  const std::uint64_t generation = event->begin_record();
  submit([event, generation](Done done) {
    event->finish_record(generation);
    done(nullptr);
  });
}

void QueueState::synchronize_quietly() noexcept {
#if CMDGRAPH_HAVE_CUDA
  // Destructors rely on this wait to free nothing under the GPU: one failed call is retried,
  // so only a broken context (which runs nothing more) ends it early.
  auto sync = [&] { return cudaStreamSynchronize(stream_.get()); };
  if (stream_ && cuda::try_call(sync) != cudaSuccess) {
    cuda::clear_error();
    (void)cuda::try_call(sync);
    cuda::clear_error();
  }
#endif
}

std::exception_ptr QueueState::take_device_error(int status) {
  std::vector<LaunchRange> ranges;
  {
    std::lock_guard lock(mutex_);
    ranges.swap(unreported_);
    if (pending_) pending_->device()->mark_finished(status);
    pending_.reset();
  }
  for (const LaunchRange& r : ranges) {
    if (auto e = r.errors->first_error(r.first, r.last, status)) return e;
  }
  return nullptr;
}

void QueueState::submit(Job job) {
  {
    std::lock_guard lock(mutex_);
    if (running_) {
      jobs_.push_back(std::move(job));
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
    if (jobs_.empty()) {
      running_ = false;
      idle_.notify_all();
      return;
    }
    next = std::move(jobs_.front());
    jobs_.pop_front();
  }
  // Start the next job from the pool, not from inside this one's completion: a run of jobs
  // that finish at once must not nest on the stack. Out of memory for that: start it here.
  auto shared = std::make_shared<Job>();
  try {
    *shared = std::move(next);
    host_pool().post([this, shared] { start(std::move(*shared)); });
  } catch (...) {
    start(std::move(*shared));
  }
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
    const BlockingWait blocking;
    const cudaError_t status = cuda::try_call([&] { return cudaStreamSynchronize(stream_.get()); });
    if (auto e = take_device_error(status)) std::rethrow_exception(e);
    if (status != cudaSuccess) cuda::fail(status, "cudaStreamSynchronize", cuda::no_command);
    return;
  }
#endif
  std::unique_lock lock(mutex_);
  if (running_) {
    lock.unlock();
    const BlockingWait blocking;
    lock.lock();
    idle_.wait(lock, [&] { return !running_; });
  }
  rethrow_pending_error(lock);
}

bool QueueState::wait_for(std::chrono::nanoseconds timeout) {
  const auto deadline = deadline_after(timeout);
#if CMDGRAPH_HAVE_CUDA
  if (stream_) {
    const BlockingWait blocking;
    const bool idle = poll_until(deadline, [&] {
      return cuda::try_call([&] { return cudaStreamQuery(stream_.get()); }) != cudaErrorNotReady;
    });
    if (!idle) return false;
    wait();
    return true;
  }
#endif
  std::unique_lock lock(mutex_);
  if (running_) {
    if (timeout <= std::chrono::nanoseconds::zero()) return false;
    lock.unlock();
    const BlockingWait blocking;
    lock.lock();
    if (!wait_until_deadline(idle_, lock, deadline, [&] { return !running_; })) return false;
  }
  rethrow_pending_error(lock);
  return true;
}

}  // namespace detail
}  // namespace cmdgraph
