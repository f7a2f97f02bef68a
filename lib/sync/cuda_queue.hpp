// CudaQueue: a queue of a CUDA device, a non-blocking stream with a priority. It records each
// launch's completion marker only when the launch's fence is still held when the next launch
// comes (or is queried), remembers which executables launched since the last wait so the wait
// can report their errors, and keeps what enqueued work still uses alive until it finished.
#pragma once

#include "cuda/handles.hpp"
#include "sync/queue_state.hpp"

#include <cmdgraph/semaphore.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <vector>

namespace cmdgraph::detail {

/// Where a queue's wait finds the errors of launches it did not watch one by one: one per
/// executable instance, asked about a range of its launch numbers.
class LaunchErrors {
 public:
  virtual ~LaunchErrors() = default;
  /// The first error among launches [first, last], all finished; `device_status` is what
  /// synchronizing the stream returned (non-zero after a device fault).
  virtual std::exception_ptr first_error(std::uint64_t first, std::uint64_t last,
                                         int device_status) const = 0;
  /// True when its launches may wait forever on something outside this process's GPU work
  /// (collectives waiting for peers): a wait then polls the stream and asks check_alive()
  /// between polls, instead of blocking.
  virtual bool watches_peers() const { return false; }
  /// While a wait that began at `waiting_since` still sees its launches unfinished: an error
  /// when they can no longer finish as they should (it has then ended them, so the stream
  /// drains), else null.
  virtual std::exception_ptr check_alive(
      std::chrono::steady_clock::time_point waiting_since) const {
    (void)waiting_since;
    return nullptr;
  }
};

class CudaQueue final : public QueueState {
 public:
  /// A stream on CUDA device `device` with stream priority `native_priority`, clamped to the
  /// device's range.
  CudaQueue(Device device, int native_priority);
  /// The device's least urgent priority for low, its most urgent for high, half way for normal.
  static int native_priority_of(Device device, Priority priority);
  /// `native_priority` clamped to the device's range, as CUDA itself clamps it.
  static int clamped_priority(Device device, int native_priority);
  ~CudaQueue() override;

  NativeStream stream() const noexcept override { return stream_.get(); }

  /// Holds the queue while one launch enqueues its work. Opening it records the previous
  /// launch's marker if that launch's fence is still held, so the marker lands right after
  /// that launch; if nobody holds that fence any more, the launch may take it over.
  class Submission {
   public:
    explicit Submission(CudaQueue& queue);
    Submission(const Submission&) = delete;
    Submission& operator=(const Submission&) = delete;
    /// The previous launch's fence if only this queue held it, else null. Nobody ever asked it
    /// anything (asking marks a fence, which takes it from the queue), so whoever launched it
    /// may renumber it for this launch instead of allocating another: a loop that drops its
    /// fences allocates none.
    std::shared_ptr<FenceState> take_unheld() noexcept { return std::move(unheld_); }
    /// The launch is enqueued: its fence (unmarked) and where its errors are kept.
    void commit(const std::shared_ptr<FenceState>& fence,
                const std::shared_ptr<const LaunchErrors>& errors, std::uint64_t launch);

   private:
    CudaQueue& queue_;
    std::lock_guard<std::mutex> lock_;
    std::shared_ptr<FenceState> unheld_;  // released under the lock unless taken
  };

  /// Inside a Submission: the stream waits for every `info.wait` value (before the work) or
  /// writes every `info.signal` value (after it). The semaphores stay alive until then.
  void enqueue_semaphore_waits(const SubmitInfo& info);
  void enqueue_semaphore_signals(const SubmitInfo& info);
  /// Keeps `keep` alive until the work enqueued so far has finished (host callbacks, an old
  /// instantiation, a semaphore's memory).
  void retire(std::shared_ptr<const void> keep);

  void mark(FenceState& fence) override;
  void wait_event(const std::shared_ptr<EventState>& event) override;
  void record_event(const std::shared_ptr<EventState>& event) override;
  void wait() override;
  bool wait_for(std::chrono::nanoseconds timeout) override;
  void synchronize_quietly() noexcept override;
  CudaQueue* as_cuda() noexcept override { return this; }

 private:
  /// After the stream was synchronized with `status`: settles the pending fence and returns
  /// the first error of the launches since the previous wait, forgetting them.
  std::exception_ptr take_device_error(int status);
  /// Waits until the stream is idle or `deadline` passes (false then). When launches on it
  /// watch peers it polls, asking them between polls; the first failure they report is put in
  /// `failure`, and the wait goes on until the stream drains.
  bool drain(std::chrono::steady_clock::time_point deadline, std::exception_ptr& failure,
             cudaError_t& status);
  /// Waits as wait() does, until `deadline`.
  bool wait_until(std::chrono::steady_clock::time_point deadline);
  /// Drops what retired work no longer uses. Cheap when nothing is retired.
  void release_finished() noexcept;

  struct LaunchRange {
    std::shared_ptr<const LaunchErrors> errors;
    std::uint64_t first, last;
  };
  struct Retired {
    cuda::Event marker;
    std::shared_ptr<const void> keep;
  };

  int device_ordinal_;
  cuda::Stream stream_;
  std::mutex mutex_;                     // submissions
  // The last launch's fence, never marked (marking takes it from here); a wait finishes it
  // without a marker and keeps it for the next launch to take over.
  std::shared_ptr<FenceState> pending_;
  std::vector<LaunchRange> unreported_;  // per executable: launches since the last wait
  std::mutex retired_mutex_;
  std::vector<Retired> retired_;
  std::atomic<std::size_t> retired_count_{0};  // retired_.size(), read without the lock
};

}  // namespace cmdgraph::detail
