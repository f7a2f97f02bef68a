// CudaQueue: submissions on one stream, lazily recorded fence markers, semaphore operations
// through stream memory operations, retirement of what enqueued work still uses.
#include "sync/cuda_queue.hpp"

#include "cuda/driver.hpp"
#include "cuda/runtime.hpp"
#include "cuda/stream_ops.hpp"
#include "sync/deadline.hpp"
#include "sync/event_state.hpp"
#include "sync/fence_state.hpp"
#include "sync/poll.hpp"
#include "sync/semaphore_state.hpp"
#include "sync/thread_pool.hpp"

#include <cmdgraph/error.hpp>

#include <algorithm>
#include <utility>

namespace cmdgraph::detail {

int CudaQueue::native_priority_of(Device device, Priority priority) {
  const auto [least, greatest] = cuda::priority_range(device.ordinal());
  switch (priority) {
    case Priority::low: return least;
    case Priority::high: return greatest;
    case Priority::normal: break;
  }
  return (least + greatest) / 2;
}

int CudaQueue::clamped_priority(Device device, int native_priority) {
  const auto [least, greatest] = cuda::priority_range(device.ordinal());
  return std::clamp(native_priority, greatest, least);
}

CudaQueue::CudaQueue(Device device, int native_priority)
    : QueueState(device, clamped_priority(device, native_priority)), device_ordinal_(device.ordinal()),
      stream_(cuda::create_stream(device.ordinal(), this->native_priority())) {}

CudaQueue::~CudaQueue() {
  const BlockingWait blocking(false);
  synchronize_quietly();
  // Fences still held learn that their work is done; errors stay with their fences.
  if (pending_) pending_->device()->mark_finished(cudaSuccess);
}

CudaQueue::Submission::Submission(CudaQueue& queue) : queue_(queue), lock_(queue.mutex_) {
  if (!queue_.pending_) return;
  // use_count 1: only this queue holds the previous fence, so nobody can ever ask for its
  // marker; skip the event.
  if (queue_.pending_.use_count() == 1) {
    unheld_ = std::move(queue_.pending_);
    return;
  }
  queue_.pending_->device()->mark(queue_.stream());
  queue_.pending_.reset();
}

void CudaQueue::Submission::commit(const std::shared_ptr<FenceState>& fence,
                                   const std::shared_ptr<const LaunchErrors>& errors,
                                   std::uint64_t launch) {
  queue_.pending_ = fence;
  queue_.release_finished();
  for (LaunchRange& r : queue_.unreported_) {
    if (r.errors == errors) {
      r.first = std::min(r.first, launch);
      r.last = std::max(r.last, launch);
      return;
    }
  }
  queue_.unreported_.push_back({errors, launch, launch});
}

void CudaQueue::mark(FenceState& fence) {
  std::lock_guard lock(mutex_);
  if (pending_.get() != &fence) return;  // marked already
  fence.device()->mark(stream());
  pending_.reset();
}

namespace {
// The semaphores of `values`, to keep alive while the stream still reads or writes them.
std::shared_ptr<const void> kept(const std::vector<SemaphoreValue>& values) {
  auto states = std::make_shared<std::vector<std::shared_ptr<SemaphoreState>>>();
  for (const SemaphoreValue& v : values) states->push_back(v.semaphore);
  return states;
}
}  // namespace

void CudaQueue::enqueue_semaphore_waits(const SubmitInfo& info) {
  if (info.wait.empty()) return;
  for (const SemaphoreValue& w : info.wait) {
    cuda::stream_wait_at_least(stream(), w.semaphore->address(), w.value, "semaphore wait");
  }
  retire(kept(info.wait));
}

void CudaQueue::enqueue_semaphore_signals(const SubmitInfo& info) {
  if (info.signal.empty()) return;
  for (const SemaphoreValue& s : info.signal) {
    cuda::stream_write(stream(), s.semaphore->address(), s.value, "semaphore signal");
  }
  retire(kept(info.signal));
}

void CudaQueue::retire(std::shared_ptr<const void> keep) {
  std::lock_guard lock(retired_mutex_);
  retired_.reserve(retired_.size() + 1);  // so the push below cannot fail after the record
  cuda::Event marker = cuda::create_event(device_ordinal_, false);
  cuda::record_event(marker.get(), stream(), cuda::no_command);
  retired_.push_back({std::move(marker), std::move(keep)});
  retired_count_.store(retired_.size(), std::memory_order_relaxed);
}

void CudaQueue::release_finished() noexcept {
  // Every launch comes here: with nothing retired (the usual case) not even the lock is taken.
  // A retire racing with this read is released by a later call.
  if (retired_count_.load(std::memory_order_relaxed) == 0) return;
  std::lock_guard lock(retired_mutex_);
  std::erase_if(retired_, [](const Retired& r) {
    return cuda::query_event(r.marker.get()) != cudaErrorNotReady;
  });
  retired_count_.store(retired_.size(), std::memory_order_relaxed);
}

void CudaQueue::wait_event(const std::shared_ptr<EventState>& event) {
  if (!event->device().is_cuda()) {
    throw Error(errc::unsupported, "a CUDA queue cannot wait for an event of the host device");
  }
  Submission submission(*this);  // CUDA events of other devices are fine here
  cuda::wait_event(stream(), event->native(), cuda::no_command);
}

void CudaQueue::record_event(const std::shared_ptr<EventState>& event) {
  if (!(event->device() == device())) {
    throw Error(errc::device_mismatch, "an event of " + event->device().name() +
                                           " cannot be recorded on a queue of " + device().name());
  }
  Submission submission(*this);
  cuda::record_event(event->native(), stream(), cuda::no_command);
  event->note_recorded();
}

bool CudaQueue::drain(std::chrono::steady_clock::time_point deadline,
                      std::exception_ptr& failure, cudaError_t& status) {
  std::vector<std::shared_ptr<const LaunchErrors>> watched;
  {
    std::lock_guard lock(mutex_);
    for (const LaunchRange& r : unreported_) {
      if (r.errors->watches_peers()) watched.push_back(r.errors);
    }
  }
  if (watched.empty() && deadline == std::chrono::steady_clock::time_point::max()) {
    status = cuda::synchronize_stream(stream());
    return true;
  }
  const auto since = std::chrono::steady_clock::now();
  const bool idle = poll_until(deadline, [&] {
    if (cuda::query_stream(stream()) != cudaErrorNotReady) return true;
    for (const auto& w : watched) {
      if (!failure) failure = w->check_alive(since);
    }
    return false;
  });
  if (!idle) return false;
  status = cuda::synchronize_stream(stream());
  return true;
}

void CudaQueue::synchronize_quietly() noexcept {
  // Destructors rely on this wait to free nothing under the GPU: one failed call is retried,
  // so only a broken context (which runs nothing more) ends it early. Launches that watch
  // peers are still watched here, so a peer that never comes cannot hang a destructor past
  // its communicator's timeout.
  std::exception_ptr ignored;
  cudaError_t status = cudaSuccess;
  try {
    (void)drain(std::chrono::steady_clock::time_point::max(), ignored, status);
  } catch (...) {
    status = cuda::synchronize_stream(stream());
  }
  if (status != cudaSuccess) {
    cuda::clear_error();
    (void)cuda::synchronize_stream(stream());
    cuda::clear_error();
  }
  release_finished();
}

std::exception_ptr CudaQueue::take_device_error(int status) {
  std::vector<LaunchRange> ranges;
  {
    std::lock_guard lock(mutex_);
    ranges.swap(unreported_);
    // Finished, and kept: held by nobody else, the next launch takes it over.
    if (pending_) pending_->device()->mark_finished(status);
  }
  release_finished();
  for (const LaunchRange& r : ranges) {
    if (auto e = r.errors->first_error(r.first, r.last, status)) return e;
  }
  return nullptr;
}

bool CudaQueue::wait_until(std::chrono::steady_clock::time_point deadline) {
  const BlockingWait blocking;
  std::exception_ptr failure;
  cudaError_t status = cudaSuccess;
  if (!drain(deadline, failure, status)) return false;
  const std::exception_ptr e = take_device_error(status);
  if (failure) std::rethrow_exception(failure);  // a peer's failure explains what followed
  if (e) std::rethrow_exception(e);
  if (status != cudaSuccess) cuda::fail(status, "cudaStreamSynchronize", cuda::no_command);
  return true;
}

void CudaQueue::wait() { wait_until(std::chrono::steady_clock::time_point::max()); }

bool CudaQueue::wait_for(std::chrono::nanoseconds timeout) {
  return wait_until(deadline_after(timeout));
}

}  // namespace cmdgraph::detail
