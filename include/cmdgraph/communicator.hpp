// Communicator: one rank of an NCCL communicator, owned or viewed, which the collective commands
// of a CommandBuffer (all_reduce, broadcast, ...) run on; the handles of those commands. Exists
// when cmdgraph was built with NCCL (CMDGRAPH_HAVE_NCCL).
#pragma once

#include <cmdgraph/config.hpp>

#if CMDGRAPH_HAVE_NCCL

#include <cmdgraph/command.hpp>
#include <cmdgraph/detail/collectives.hpp>
#include <cmdgraph/detail/native.hpp>
#include <cmdgraph/device.hpp>

#include <array>
#include <chrono>
#include <cstddef>
#include <memory>
#include <span>
#include <vector>

namespace cmdgraph {

namespace detail {
class CommunicatorState;
struct CommunicatorAccess;
}  // namespace detail

/// What every rank of one communicator starts from (NCCL's ncclUniqueId): made once, by one
/// process, with Communicator::unique_id(), and handed to every other rank's process as plain
/// bytes before they construct their Communicator: through MPI (`MPI_Bcast(id.bytes.data(),
/// id.bytes.size(), MPI_BYTE, 0, MPI_COMM_WORLD)`), or written to a file on a shared file
/// system that the others read once it is complete (write to a temporary name, then rename).
struct CommunicatorId {
  /// The id's bytes, opaque.
  std::array<std::byte, 128> bytes{};
};

/// How a Communicator watches the launches that use it.
struct CommunicatorOptions {
  /// How long a wait (Fence or Queue, and an Executable's or Queue's destructor) may see a
  /// launch that uses the communicator unfinished before cmdgraph gives up on it: it aborts the
  /// communicator (ncclCommAbort, which ends its kernels) and the wait throws Error(timeout).
  /// A rank that died or never launched leaves its peers' collectives waiting forever; this is
  /// what ends that. nanoseconds::max(): no limit (only NCCL's asynchronous errors end a wait).
  std::chrono::nanoseconds timeout = std::chrono::nanoseconds::max();
};

/// One rank of an NCCL communicator, bound to one CUDA device: the ranks of a communicator run
/// collectives together, each rank launching its own executable on its own device. Move-only.
///
/// Owned (from all() or the id constructor), the NCCL communicator is destroyed when the last
/// of this handle and the executables compiled with it is gone; an executable keeps it alive
/// and waits for its launches before letting go, so destroying a Communicator while a launch
/// that uses it runs is safe. A view (view()) never destroys the communicator it was given.
///
/// Waits on launches that use a communicator poll NCCL for asynchronous errors
/// (ncclCommGetAsyncError) instead of blocking: a peer that failed surfaces as Error(nccl_error)
/// naming the collectives, and CommunicatorOptions::timeout bounds a wait for peers that never
/// come. Either way cmdgraph aborts the communicator (ncclCommAbort, owned or viewed) so that its
/// kernels end: aborted() turns true, native_handle() null, and compiling or launching anything
/// that uses it throws Error(nccl_error). Make a new communicator to go on.
class Communicator {
 public:
  /// An empty handle: operator bool is false; recording with it throws Error(invalid_handle).
  Communicator() noexcept;
  /// One communicator over `devices`, one rank per device in the order given, in this process
  /// (ncclCommInitAll); element i is rank i. Throws Error(nccl_error) when NCCL cannot make it,
  /// Error(invalid_argument) for no device, the host or a device named twice.
  static std::vector<Communicator> all(std::span<const Device> devices,
                                       const CommunicatorOptions& options = {});
  /// A fresh id for a communicator whose ranks start in several processes (ncclGetUniqueId).
  static CommunicatorId unique_id();
  /// Rank `rank` of `size` on `device`, joining the communicator `id` names
  /// (ncclCommInitRank): blocks until every rank has joined. One call per rank, each from its
  /// own process or thread. Throws Error(invalid_argument) for a rank outside [0, size) or the
  /// host device, Error(nccl_error) when NCCL fails.
  Communicator(Device device, const CommunicatorId& id, int rank, int size,
               const CommunicatorOptions& options = {});
  /// A handle on `comm`, a communicator the caller made and destroys, after every executable
  /// that uses it is gone. Throws Error(invalid_argument) for a null one.
  static Communicator view(NativeCommunicator comm, const CommunicatorOptions& options = {});

  /// Moves the handle; the moved-from one is empty.
  Communicator(Communicator&&) noexcept;
  /// Moves the handle, as the move constructor; the communicator this one held is let go.
  Communicator& operator=(Communicator&&) noexcept;
  /// Lets go of the communicator (destroyed once no executable uses it, unless a view).
  ~Communicator();

  /// The device of this rank.
  /// \pre Not empty (else Error(invalid_handle)), as for rank(), size() and aborted().
  Device device() const;
  /// This rank, in [0, size()).
  int rank() const;
  /// Ranks in the communicator.
  int size() const;
  /// True once cmdgraph aborted the communicator after a failure or a timeout.
  bool aborted() const;
  /// The NCCL communicator (ncclComm_t), for NCCL calls of your own; null once aborted or
  /// empty.
  NativeCommunicator native_handle() const noexcept;
  /// False for an empty (default-constructed or moved-from) handle.
  explicit operator bool() const noexcept { return state_ != nullptr; }

 private:
  friend struct detail::CommunicatorAccess;
  explicit Communicator(std::shared_ptr<detail::CommunicatorState> state) noexcept;
  std::shared_ptr<detail::CommunicatorState> state_;
};

/// One send or receive of CommandBuffer::exchange: made by send_to() and recv_from().
struct PeerTransfer {
  /// What is sent or received, to or from which rank.
  detail::TransferSpec spec;
};

/// Sends the first `count` elements of `memory` (a View, Buffer or subview on the
/// communicator's device) to rank `peer`, which receives them with a recv_from() of this rank.
template <class Memory>
PeerTransfer send_to(int peer, const Memory& memory, std::size_t count) {
  PeerTransfer t;
  t.spec = detail::transfer_spec<true>(peer, memory, count);
  return t;
}
/// Receives `count` elements from rank `peer` into the first `count` elements of `memory`.
template <class Memory>
PeerTransfer recv_from(int peer, const Memory& memory, std::size_t count) {
  PeerTransfer t;
  t.spec = detail::transfer_spec<false>(peer, memory, count);
  return t;
}

/// A collective command over elements of type T (all_reduce, broadcast, reduce, all_gather,
/// reduce_scatter), whose buffers and count Executable::update can change.
template <class T>
class CollectiveCommand : public BasicCommand<CollectiveCommand<T>> {
 public:
  /// An invalid handle, as BasicCommand().
  CollectiveCommand() = default;
  /// The handle of command `ref` (the collective calls of CommandBuffer make these).
  explicit CollectiveCommand(detail::CommandRef ref) noexcept
      : BasicCommand<CollectiveCommand<T>>(ref) {}
};

}  // namespace cmdgraph

#endif  // CMDGRAPH_HAVE_NCCL
