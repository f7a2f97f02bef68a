// Typed, checked NCCL operations: making, querying, aborting and destroying communicators, their
// asynchronous errors, and collectives and grouped peer transfers on a stream. The only code
// that calls NCCL; every call goes through the checked door below, counted with CUDA's calls,
// so fault injection can fail the Nth NCCL call as it fails the Nth CUDA call.
#pragma once

#include "cuda/check.hpp"

#include <cmdgraph/detail/collectives.hpp>

#include <nccl.h>

#include <cstddef>
#include <exception>
#include <span>
#include <string>
#include <vector>

namespace cmdgraph::detail::cuda::nccl {

/// Error(nccl_error) for a failed `status` of `call`, naming what it served, with NCCL's status
/// text and its last error message for `comm` (which may be null).
[[noreturn]] void fail(ncclResult_t status, const char* call, Served served, ncclComm_t comm);
/// "ncclRemoteError (remote process exited or there was a network error)": name and text.
std::string describe(ncclResult_t status);

/// Runs `f` (an NCCL call) unless fault injection fails it (with ncclUnhandledCudaError);
/// throws on failure.
template <class F>
void call(const char* name, Served served, ncclComm_t comm, F&& f) {
  ncclResult_t status = injection::armed.load(std::memory_order_relaxed) &&
                                injection::next() != cudaSuccess
                            ? ncclUnhandledCudaError
                            : ncclSuccess;
  if (status == ncclSuccess) status = f();
  if (status != ncclSuccess) fail(status, name, served, comm);
}

ncclUniqueId unique_id();
/// One communicator per device of `devices`, rank i on devices[i] (ncclCommInitAll).
std::vector<ncclComm_t> init_all(std::span<const int> devices);
/// Rank `rank` of `size` on `device`, joining `id` (ncclCommInitRank); blocks for the others.
ncclComm_t init_rank(int device, const ncclUniqueId& id, int rank, int size);

/// The device, rank and size of a communicator.
struct CommShape {
  int device = -1, rank = -1, size = 0;
};
CommShape shape_of(ncclComm_t comm);

/// NCCL's asynchronous error of `comm` (ncclSuccess while healthy, ncclInProgress while an
/// operation of a non-blocking communicator is still being set up). Never throws: a failed
/// query is returned as its status.
ncclResult_t async_error(ncclComm_t comm) noexcept;
/// NCCL's last error message for `comm`, or empty.
std::string last_error(ncclComm_t comm) noexcept;
/// Ends every operation of `comm` still running on the device, then frees it once every CUDA
/// graph that captured it is destroyed (ncclCommAbort blocks until then). Never throws.
void abort(ncclComm_t comm) noexcept;
/// Frees `comm` once its operations finished and every CUDA graph that captured it is
/// destroyed (ncclCommDestroy blocks until then). Never throws.
void destroy(ncclComm_t comm) noexcept;

/// Enqueues collective `spec` (not an exchange) of `comm` on `stream`.
void run(const CollectiveSpec& spec, ncclComm_t comm, cudaStream_t stream, Served served);
/// Opens a group of point-to-point transfers (ncclGroupStart) for `comm`.
void group_start(ncclComm_t comm, Served served);
/// Adds one send or receive of `comm` on `stream` to the open group.
void transfer(const TransferSpec& t, ncclComm_t comm, cudaStream_t stream, Served served);
/// Closes the open group (ncclGroupEnd), which enqueues its members; throws on failure, with
/// the group closed either way.
void group_end(ncclComm_t comm, Served served);
/// Closes the open group after a member failed, unchecked: an open group would swallow every
/// later NCCL call of this thread. The members already added are enqueued all the same.
void close_group() noexcept;

}  // namespace cmdgraph::detail::cuda::nccl
