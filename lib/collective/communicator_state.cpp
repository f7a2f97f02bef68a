// CommunicatorState: NCCL calls under the state's lock, health checks between polls, abort.
#include "collective/communicator_state.hpp"

#include "cuda/nccl_ops.hpp"

#include <cstdio>
#include <system_error>
#include <thread>
#include <utility>

namespace cmdgraph::detail {

CommunicatorState::CommunicatorState(NativeCommunicator comm, bool owned, int device, int rank,
                                     int size, std::chrono::nanoseconds timeout) noexcept
    : comm_(comm), owned_(owned), device_(device), rank_(rank), size_(size),
      timeout_(timeout) {}

CommunicatorState::~CommunicatorState() {
  // Every executable that used it has waited for its launches before letting go of it, and
  // whatever holds a graph that captured it holds this state too, for longer than the graph:
  // ncclCommDestroy (and an abort under way) waits for every such graph to be destroyed, so
  // neither waits long here. An abort is joined rather than left running: a process that ends
  // under it tears NCCL and CUDA down beneath its thread.
  if (aborting_.joinable()) aborting_.join();
  if (owned_ && comm_) cuda::nccl::destroy(comm_);
}

std::string CommunicatorState::describe() const {
  return "rank " + std::to_string(rank_) + " of " + std::to_string(size_) + " on cuda:" +
         std::to_string(device_);
}

CommunicatorState::Use::Use(CommunicatorState& state, const std::string& command)
    : state_(state), lock_(state.mutex_), comm_(state.comm_) {
  if (!comm_) {
    throw Error(errc::nccl_error,
                "command '" + command + "' cannot use communicator " + state.describe() +
                    ": cmdgraph aborted it after it " + state.failure_.why,
                {command}, state.failure_.status);
  }
}

Error CommunicatorState::Use::abort_after(const Error& cause) {
  const std::string why = "failed in the middle of a group of transfers (" +
                          std::string(cause.what()) + ")";
  const bool from_nccl = cause.code() == errc::nccl_error;
  state_.abort_locked({errc::nccl_error, why, from_nccl ? cause.cuda_status() : 0});
  comm_ = nullptr;
  return Error(cause.code(),
               std::string(cause.what()) + "; the transfers already enqueued cannot be taken " +
                   "back, so cmdgraph aborted communicator " + state_.describe(),
               cause.commands(), cause.cuda_status());
}

NativeCommunicator CommunicatorState::native() const noexcept {
  std::lock_guard lock(mutex_);
  return comm_;
}

std::optional<CommunicatorFailure> CommunicatorState::failure() const {
  if (!failed()) return std::nullopt;
  std::lock_guard lock(mutex_);
  return failure_;
}

namespace {
std::string milliseconds(std::chrono::nanoseconds t) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.0f ms",
                std::chrono::duration<double, std::milli>(t).count());
  return text;
}
}  // namespace

std::optional<CommunicatorFailure> CommunicatorState::check(
    std::chrono::steady_clock::time_point waiting_since) {
  std::unique_lock lock(mutex_, std::try_to_lock);
  if (!lock.owns_lock()) return std::nullopt;  // an NCCL call in progress: ask again later
  if (failed()) return failure_;
  if (!comm_) return std::nullopt;  // a state made without a communicator (tests)
  const ncclResult_t async = cuda::nccl::async_error(comm_);
  if (async != ncclSuccess && async != ncclInProgress) {
    std::string why = "reported an asynchronous error: " + cuda::nccl::describe(async);
    if (const std::string detail = cuda::nccl::last_error(comm_); !detail.empty()) {
      why += ": " + detail;
    }
    abort_locked({errc::nccl_error, std::move(why), static_cast<int>(async)});
    return failure_;
  }
  if (timeout_ != std::chrono::nanoseconds::max() &&
      std::chrono::steady_clock::now() - waiting_since > timeout_) {
    abort_locked({errc::timeout,
                  "left a launch unfinished past its timeout of " + milliseconds(timeout_) +
                      " (a peer that failed or never launched leaves the others waiting)",
                  0});
    return failure_;
  }
  return std::nullopt;
}

void CommunicatorState::abort_locked(CommunicatorFailure failure) noexcept {
  failure_ = std::move(failure);
  // ncclCommAbort first raises the flag that ends the communicator's kernels, so the launches
  // waited on finish; then it blocks until every CUDA graph that captured the communicator is
  // destroyed, and frees it (a view's too: NCCL has no way to end the kernels and keep it).
  // Those graphs belong to executables that may live on, so it runs on a thread of its own,
  // which the destructor joins once they are gone. Called once: comm_ is null after.
  NativeCommunicator comm = std::exchange(comm_, nullptr);
  failed_.store(true, std::memory_order_release);
  try {
    aborting_ = std::thread([comm] { cuda::nccl::abort(comm); });
  } catch (const std::system_error&) {
    cuda::nccl::abort(comm);  // no thread to be had: abort here, waiting for the graphs
  }
}

}  // namespace cmdgraph::detail
