// CommunicatorState: one rank of an NCCL communicator as the library holds it, shared by the
// public Communicator, the recordings and the executables that use it; its health (NCCL's
// asynchronous errors, a wait's timeout) and the abort that ends a failed communicator's work.
#pragma once

#include <cmdgraph/communicator.hpp>
#include <cmdgraph/error.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace cmdgraph::detail {

/// Why a communicator was given up: what the waits of the launches that use it throw.
struct CommunicatorFailure {
  errc code = errc::nccl_error;  // nccl_error (an asynchronous error) or timeout
  std::string why;               // a sentence fragment: "reported ...", "left a launch ..."
  int status = 0;                // the ncclResult_t, for nccl_error
};

class CommunicatorState {
 public:
  /// Holds `comm`, rank `rank` of `size` on CUDA device `device`; destroys it at the end when
  /// `owned` (and `comm` is not null: tests make states with no NCCL communicator).
  CommunicatorState(NativeCommunicator comm, bool owned, int device, int rank, int size,
                    std::chrono::nanoseconds timeout) noexcept;
  ~CommunicatorState();
  CommunicatorState(const CommunicatorState&) = delete;
  CommunicatorState& operator=(const CommunicatorState&) = delete;

  int device() const noexcept { return device_; }
  int rank() const noexcept { return rank_; }
  int size() const noexcept { return size_; }
  /// "rank 0 of 2 on cuda:0", for messages.
  std::string describe() const;

  /// The communicator for one NCCL call, held so that an abort cannot free it meanwhile.
  /// Throws Error(nccl_error) naming `command` once the communicator was aborted.
  class Use {
   public:
    Use(CommunicatorState& state, const std::string& command);
    NativeCommunicator comm() const noexcept { return comm_; }
    /// After `cause` left work on the device that NCCL cannot take back (half a group of
    /// transfers): aborts the communicator, which ends that work, and returns `cause` saying
    /// so, for the caller to throw.
    Error abort_after(const Error& cause);

   private:
    CommunicatorState& state_;
    std::lock_guard<std::mutex> lock_;
    NativeCommunicator comm_;
  };
  /// The communicator, or null once aborted (for Communicator::native_handle).
  NativeCommunicator native() const noexcept;

  /// True once aborted.
  bool failed() const noexcept { return failed_.load(std::memory_order_acquire); }
  /// Why it was aborted; nullopt while healthy.
  std::optional<CommunicatorFailure> failure() const;
  /// Asks NCCL for an asynchronous error; a wait that began at `waiting_since` and has passed
  /// the timeout counts as a failure too. On a failure, aborts the communicator (its kernels
  /// end, so the work waited on finishes; NCCL frees it on a thread of its own once the last
  /// graph that captured it is gone) and returns why; nullopt while it may still finish.
  /// Never blocks behind an NCCL call of another thread (it tries again at the next poll).
  std::optional<CommunicatorFailure> check(std::chrono::steady_clock::time_point waiting_since);

 private:
  void abort_locked(CommunicatorFailure failure) noexcept;

  mutable std::mutex mutex_;  // NCCL calls on the communicator, its abort
  NativeCommunicator comm_;
  bool owned_;
  int device_, rank_, size_;
  std::chrono::nanoseconds timeout_;
  std::atomic<bool> failed_{false};
  CommunicatorFailure failure_;  // set under mutex_ before failed_
  std::thread aborting_;         // ncclCommAbort, once aborted (abort_locked)
};

/// The library's door to the state behind a public Communicator.
struct CommunicatorAccess {
  static const std::shared_ptr<CommunicatorState>& state(const Communicator& c) noexcept {
    return c.state_;
  }
  static Communicator wrap(std::shared_ptr<CommunicatorState> state) noexcept {
    return Communicator(std::move(state));
  }
};

}  // namespace cmdgraph::detail
