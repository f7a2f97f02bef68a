// The process's one CUPTI session: its subscriber, the activity buffers CUPTI fills, which
// launches their records belong to, and which nodes of an instantiated graph were cloned
// from which of ours. Free of CUPTI's headers: a build without CUPTI links stubs that say
// CUPTI is missing (cupti_absent.cpp).
#pragma once

#include "cuda/check.hpp"

#include <cmdgraph/error.hpp>

#include <cuda_runtime_api.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace cmdgraph::detail::cuda::cupti {

/// CUPTI refused something (a call failed, collection could not be switched on, a callback
/// failed): thrown by CUPTI's door and the session, so a caller that can do without CUPTI
/// (`profile = true`) tells it from every other error by its type.
class Refused : public Error {
 public:
  using Error::Error;
};

/// What CUPTI collects records of, as bits of an unsigned. A traced launch switches on only
/// what its graph runs: on the H200 (run 58) switching the copy and fill kinds on and off
/// around each launch of a chain of 1,000 empty kernels cost 5% more than the kernel kind alone.
namespace work {
inline constexpr unsigned kernels = 1, copies = 2, fills = 4, all = 7;
}  // namespace work
/// The work bits of a graph node of `type`: 0 for one that runs no kernel, copy or fill.
inline unsigned work_of(cudaGraphNodeType type) noexcept {
  if (type == cudaGraphNodeTypeKernel) return work::kernels;
  if (type == cudaGraphNodeTypeMemcpy) return work::copies;
  if (type == cudaGraphNodeTypeMemset) return work::fills;
  return 0;
}

/// One activity record of a kernel, copy or fill a graph node ran.
struct Record {
  std::uint64_t node = 0;   ///< CUPTI's id of the node (of the instantiated graph) that ran it
  std::uint64_t start = 0;  ///< nanoseconds on CUPTI's clock
  std::uint64_t end = 0;
};

/// The records of one traced graph launch, filled as CUPTI hands its buffers over (on its own
/// thread or on one that flushes).
class LaunchRecords {
 public:
  /// The records delivered so far.
  std::vector<Record> records() const;
  /// How many records were delivered so far.
  std::size_t size() const;
  /// The first correlation id CUPTI gave the launch (its cudaGraphLaunch, then the
  /// cuGraphLaunch that makes; records of either are filed here); 0 when none was seen.
  std::uint32_t correlation() const;
  /// Why the launch was not traced (a CUPTI call failed as it was enqueued); empty if it was.
  std::string error() const;

 private:
  friend class Session;
  mutable std::mutex mutex_;
  std::vector<Record> records_;
  std::uint32_t correlation_ = 0;
  std::string error_;
};

/// The process's CUPTI subscriber (CUPTI allows one per process), shared by every executable
/// profiled through CUPTI. Started by the first acquire() and kept until the process ends:
/// CUPTI may hand buffers over during exit.
class Session {
 public:
  /// The session, started on first use; null, with `why` said, when CUPTI cannot be used
  /// (not in this build, held by another subscriber such as Nsight Systems, a call failed).
  /// A failed start is tried again by the next call.
  static Session* acquire(std::string& why);
  /// Whether the session has started. Once it has, every graph launch of the process costs
  /// more host time, traced or not (about 0.4 us a node on an H200, bench_cupti_side), until
  /// the process ends: neither unsubscribing nor anything short of cuptiFinalize (after which
  /// graph launches failed, run 69) gives it back.
  static bool started();

  /// While any is alive, CUPTI collects the records of the work it names (process-wide: every
  /// kernel of the process is traced, at CUPTI's cost): hold one only while a traced launch
  /// is enqueued or a graph to trace is instantiated.
  class Collecting {
   public:
    /// `what`: work bits (work::kernels, ...).
    explicit Collecting(Session& session, unsigned what = work::all);
    ~Collecting();
    Collecting(const Collecting&) = delete;
    Collecting& operator=(const Collecting&) = delete;
    /// Why collection could not be switched on (empty: it is on).
    const std::string& error() const noexcept { return error_; }

   private:
    Session& session_;
    unsigned what_;
    std::string error_;
    bool counted_ = false;
  };

  /// While alive, the graph launches this thread makes are traced into `into` (their
  /// correlation id routes their records there); the work bits `collect` are collected
  /// meanwhile. Never throws: a failed call is kept as `into`'s error.
  class Window {
   public:
    Window(Session& session, std::shared_ptr<LaunchRecords> into, unsigned collect);
    ~Window();
    Window(const Window&) = delete;
    Window& operator=(const Window&) = delete;

   private:
    std::shared_ptr<LaunchRecords> into_;
    std::unique_ptr<Collecting> collecting_;
  };

  /// Hands every buffer whose records are complete over to the launches they belong to
  /// (blocking; not for the launch path), and files their records before returning. `forced`:
  /// buffers holding records still open too, which CUPTI then never completes. Throws Error
  /// on a failed call.
  void flush(bool forced);
  /// What to add to a steady_clock time, in nanoseconds since its epoch, to place it on
  /// CUPTI's clock. Throws Error on a failed call.
  std::int64_t steady_to_cupti();

  /// Records delivered that belonged to no traced launch, and records CUPTI dropped (its
  /// buffers were full), since the session started.
  struct Lost {
    std::uint64_t unclaimed = 0, dropped = 0;
  };
  Lost lost() const;
  /// Copies of the latest records that belonged to no traced launch (at most 65,536 kept),
  /// those that started at `from` (CUPTI's clock) or later: where a launch whose own records
  /// went astray (CUPTI 13.0 can give them another launch's correlation id) finds its nodes'.
  std::vector<Record> unclaimed(std::uint64_t from) const;
  /// The most holders of collection of any one kind now (Collecting and collecting Windows
  /// alive): 0 between traced launches, so that no other launch of the process is traced.
  int collecting() const;

 private:
  Session() = default;
  friend struct SessionAccess;
  // A buffer CUPTI completed, queued for parse_handed_over (a thread of the session's own).
  void hand_over(std::uint8_t* buffer, std::size_t valid);
  [[noreturn]] void parse_handed_over();
  // Parses every buffer queued, on this thread.
  void parse_now();
  void route(std::uint32_t correlation, const Record& record);
  void open(std::uint32_t correlation, const std::shared_ptr<LaunchRecords>& into);
  std::string collect(unsigned what, bool on);

  mutable std::mutex mutex_;  // what the parser routes to: launches, losses
  std::vector<std::pair<std::uint32_t, std::weak_ptr<LaunchRecords>>> launches_;
  Lost lost_;
  // Switching collection: never held with mutex_, since switching it off can wait for
  // CUPTI's thread (run 53 hung when that thread routed records under mutex_).
  mutable std::mutex collect_mutex_;
  int collecting_[3] = {};  // holders of each work bit: kernels, copies, fills
  std::deque<Record> unclaimed_;  // the latest, oldest first
  // Buffers handed over and not parsed yet; parse_mutex_ is held by whoever parses them.
  std::mutex handed_mutex_;
  std::condition_variable handed_cv_;
  std::deque<std::pair<std::uint8_t*, std::size_t>> handed_;
  std::mutex parse_mutex_;
};


/// While alive, records which nodes the graph calls of this thread clone (an instantiation
/// clones every node of the graph): CUPTI's id of each original and of its clone, in order.
class CloneLog {
 public:
  CloneLog();
  ~CloneLog();
  CloneLog(const CloneLog&) = delete;
  CloneLog& operator=(const CloneLog&) = delete;
  /// The (original, clone) pairs so far; throws Error when a call failed in CUPTI's callback.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> take(Served served);

  /// For the callback.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> pairs;
  std::string error;

 private:
  CloneLog* previous_;
};

/// CUPTI's id of graph node `node` (the id its activity records carry once it runs). Throws
/// Error naming `served`.
std::uint64_t node_id(cudaGraphNode_t node, Served served);

}  // namespace cmdgraph::detail::cuda::cupti
