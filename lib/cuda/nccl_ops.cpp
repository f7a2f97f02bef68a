// NCCL operations through the checked door: communicators, asynchronous errors, collectives.
// NCCL's functions come from libnccl, loaded when the first communicator is made
// (loaded_library.hpp): only programs that use collectives need it.
#include "cuda/nccl_ops.hpp"

#include "cuda/handles.hpp"
#include "cuda/loaded_library.hpp"
#include "library_paths.hpp"

#include <cmdgraph/error.hpp>

#include <cstring>

namespace cmdgraph::detail::cuda::nccl {
namespace {

#define CMDGRAPH_NCCL_FUNCTIONS(X)                                                         \
  X(ncclAllGather) X(ncclAllReduce) X(ncclBroadcast) X(ncclCommAbort) X(ncclCommCount)      \
  X(ncclCommCuDevice) X(ncclCommDestroy) X(ncclCommGetAsyncError) X(ncclCommInitAll)        \
  X(ncclCommInitRank) X(ncclCommUserRank) X(ncclGetErrorString) X(ncclGetLastError)         \
  X(ncclGetUniqueId) X(ncclGroupEnd) X(ncclGroupStart) X(ncclRecv) X(ncclReduce)            \
  X(ncclReduceScatter) X(ncclSend)

/// NCCL's functions, each member named as the function it points to.
struct Functions {
#define CMDGRAPH_NCCL_MEMBER(f) decltype(&::f) f = nullptr;
  CMDGRAPH_NCCL_FUNCTIONS(CMDGRAPH_NCCL_MEMBER)
#undef CMDGRAPH_NCCL_MEMBER
};

/// The loaded libnccl's functions; loads it on the first call (thread-safe). Throws
/// Error(unsupported) saying where it looked when it cannot (CMDGRAPH_NCCL_LIBRARY chooses).
const Functions& loaded() {
  static constexpr std::string_view candidates[] = {CMDGRAPH_NCCL_CANDIDATES};
  return loaded_once<Functions>("NCCL (libnccl)", candidates, "CMDGRAPH_NCCL_LIBRARY",
                                [](const LoadedLibrary& library, Functions& f) {
                                  CMDGRAPH_NCCL_FUNCTIONS(CMDGRAPH_RESOLVE_FUNCTION)
                                });
}

// The public headers number element types as NCCL does, so no NCCL header is needed to record.
static_assert(static_cast<int>(ElementType::int8) == ncclInt8);
static_assert(static_cast<int>(ElementType::uint8) == ncclUint8);
static_assert(static_cast<int>(ElementType::int32) == ncclInt32);
static_assert(static_cast<int>(ElementType::uint32) == ncclUint32);
static_assert(static_cast<int>(ElementType::int64) == ncclInt64);
static_assert(static_cast<int>(ElementType::uint64) == ncclUint64);
static_assert(static_cast<int>(ElementType::float16) == ncclFloat16);
static_assert(static_cast<int>(ElementType::float32) == ncclFloat32);
static_assert(static_cast<int>(ElementType::float64) == ncclFloat64);
static_assert(static_cast<int>(ElementType::bfloat16) == ncclBfloat16);

ncclDataType_t data_type(ElementType type) noexcept { return static_cast<ncclDataType_t>(type); }

ncclRedOp_t reduction(ReduceOp op) noexcept {
  switch (op) {
    case ReduceOp::sum: return ncclSum;
    case ReduceOp::product: return ncclProd;
    case ReduceOp::max: return ncclMax;
    case ReduceOp::min: return ncclMin;
    case ReduceOp::average: break;
  }
  return ncclAvg;
}

const char* status_name(ncclResult_t status) noexcept {
  switch (status) {
    case ncclSuccess: return "ncclSuccess";
    case ncclUnhandledCudaError: return "ncclUnhandledCudaError";
    case ncclSystemError: return "ncclSystemError";
    case ncclInternalError: return "ncclInternalError";
    case ncclInvalidArgument: return "ncclInvalidArgument";
    case ncclInvalidUsage: return "ncclInvalidUsage";
    case ncclRemoteError: return "ncclRemoteError";
    case ncclInProgress: return "ncclInProgress";
    default: break;
  }
  return "ncclResult";
}

}  // namespace

std::string describe(ncclResult_t status) {
  return std::string(status_name(status)) + " (" + loaded().ncclGetErrorString(status) + ")";
}

std::string last_error(ncclComm_t comm) noexcept {
  try {
    const char* text = loaded().ncclGetLastError(comm);
    return text ? std::string(text) : std::string();
  } catch (...) {
    return {};
  }
}

void fail(ncclResult_t status, const char* call, Served served, ncclComm_t comm) {
  // NCCL calls CUDA itself; a CUDA failure inside it may leave CUDA's sticky error set.
  clear_error();
  std::vector<std::string> commands;
  std::string message = failed_call(call, served, commands) + ": " + describe(status);
  if (const std::string detail = last_error(comm); !detail.empty()) message += ": " + detail;
  throw Error(errc::nccl_error, message, std::move(commands), static_cast<int>(status));
}

ncclUniqueId unique_id() {
  ncclUniqueId id;
  call("ncclGetUniqueId", no_command, nullptr, [&] { return loaded().ncclGetUniqueId(&id); });
  return id;
}

std::vector<ncclComm_t> init_all(std::span<const int> devices) {
  std::vector<ncclComm_t> comms(devices.size(), nullptr);
  call("ncclCommInitAll", no_command, nullptr, [&] {
    return loaded().ncclCommInitAll(comms.data(), static_cast<int>(devices.size()), devices.data());
  });
  return comms;
}

ncclComm_t init_rank(int device, const ncclUniqueId& id, int rank, int size) {
  const ScopedDevice on(device);  // NCCL binds the rank to the current device
  ncclComm_t comm = nullptr;
  call("ncclCommInitRank", no_command, nullptr,
       [&] { return loaded().ncclCommInitRank(&comm, size, id, rank); });
  return comm;
}

CommShape shape_of(ncclComm_t comm) {
  const Functions& f = loaded();
  CommShape s;
  call("ncclCommCuDevice", no_command, comm, [&] { return f.ncclCommCuDevice(comm, &s.device); });
  call("ncclCommUserRank", no_command, comm, [&] { return f.ncclCommUserRank(comm, &s.rank); });
  call("ncclCommCount", no_command, comm, [&] { return f.ncclCommCount(comm, &s.size); });
  return s;
}

ncclResult_t async_error(ncclComm_t comm) noexcept {
  if (injection::armed.load(std::memory_order_relaxed) && injection::next() != cudaSuccess) {
    return ncclUnhandledCudaError;
  }
  if (injection::async_failure.load(std::memory_order_relaxed) != 0) {
    if (const int injected = injection::async_failure.exchange(0)) {
      return static_cast<ncclResult_t>(injected);
    }
  }
  ncclResult_t async = ncclSuccess;
  const ncclResult_t status = loaded().ncclCommGetAsyncError(comm, &async);
  return status != ncclSuccess ? status : async;
}

void abort(ncclComm_t comm) noexcept {
  // Not counted: it is the way out of a failure, and it must always be taken.
  (void)loaded().ncclCommAbort(comm);
  clear_error();
}

void destroy(ncclComm_t comm) noexcept {
  // Not counted, as abort(): clean-up always runs, and reports nothing.
  (void)loaded().ncclCommDestroy(comm);
  clear_error();
}

void run(const CollectiveSpec& c, ncclComm_t comm, cudaStream_t stream, Served served) {
  const Functions& f = loaded();
  const ncclDataType_t type = data_type(c.type);
  switch (c.op) {
    case CollectiveOp::all_reduce:
      call("ncclAllReduce", served, comm, [&] {
        return f.ncclAllReduce(c.send.data, c.recv.data, c.count, type, reduction(c.reduce), comm,
                               stream);
      });
      return;
    case CollectiveOp::broadcast:
      call("ncclBroadcast", served, comm, [&] {
        return f.ncclBroadcast(c.send.data, c.recv.data, c.count, type, c.root, comm, stream);
      });
      return;
    case CollectiveOp::reduce:
      call("ncclReduce", served, comm, [&] {
        return f.ncclReduce(c.send.data, c.recv.data, c.count, type, reduction(c.reduce), c.root,
                            comm, stream);
      });
      return;
    case CollectiveOp::all_gather:
      call("ncclAllGather", served, comm, [&] {
        return f.ncclAllGather(c.send.data, c.recv.data, c.count, type, comm, stream);
      });
      return;
    case CollectiveOp::reduce_scatter:
      call("ncclReduceScatter", served, comm, [&] {
        return f.ncclReduceScatter(c.send.data, c.recv.data, c.count, type, reduction(c.reduce),
                                   comm, stream);
      });
      return;
    case CollectiveOp::exchange: break;
  }
  throw Error(errc::invalid_argument, "an exchange is not one NCCL collective",
              {std::string(served.name)});
}

void group_start(ncclComm_t comm, Served served) {
  call("ncclGroupStart", served, comm, [] { return loaded().ncclGroupStart(); });
}

void transfer(const TransferSpec& t, ncclComm_t comm, cudaStream_t stream, Served served) {
  if (t.sends) {
    call("ncclSend", served, comm, [&] {
      return loaded().ncclSend(t.memory.data, t.count, data_type(t.type), t.peer, comm, stream);
    });
  } else {
    call("ncclRecv", served, comm, [&] {
      return loaded().ncclRecv(t.memory.data, t.count, data_type(t.type), t.peer, comm, stream);
    });
  }
}

void group_end(ncclComm_t comm, Served served) {
  // The group is closed whatever fault injection says about the call.
  const ncclResult_t ended = loaded().ncclGroupEnd();
  call("ncclGroupEnd", served, comm, [&] { return ended; });
}

void close_group() noexcept {
  (void)loaded().ncclGroupEnd();
  clear_error();
}

}  // namespace cmdgraph::detail::cuda::nccl
