// CollectiveCalls: the collective recording calls of a CommandBuffer (NCCL), a base of its own
// so that command_buffer.hpp keeps to the calls every build has. Builds with NCCL only.
#pragma once

#include <cmdgraph/command.hpp>
#include <cmdgraph/communicator.hpp>
#include <cmdgraph/detail/collectives.hpp>
#include <cmdgraph/detail/views.hpp>

#include <cstddef>
#include <initializer_list>
#include <source_location>
#include <span>

namespace cmdgraph {

/// The collective commands of a CommandBuffer (`Buffer`, which derives from this).
template <class Buffer>
class CollectiveCalls {
 public:
  // Collectives (NCCL). Each rank records its own buffer with the same collectives in the same
  // order, for its own device, as NCCL programs are written; the collectives of one
  // communicator in one buffer run in recording order (each gets an edge from the previous
  // one), so the ranks' orders agree. Buffers are device memory of the communicator's device;
  // the element type, from the buffers, is one NCCL carries (8-, 32- and 64-bit integers,
  // __half, __nv_bfloat16, float, double), else the call does not compile. Each reads its
  // source and writes its destination (declared access, checked or inferred like a copy's).
  // On the CUDA graph backend a collective is a child graph captured from the NCCL call; on
  // the streams backend the NCCL call is made at every launch; the host backend refuses it.
  // A rank's executable waits for its peers on the GPU: launch every rank's executable (one
  // host thread per rank when one process drives several GPUs, as NCCL asks).
  // Misuse throws Error(invalid_argument) naming the command: an empty communicator
  // (invalid_handle), null or empty memory, host memory, memory of another device, a count
  // larger than a buffer, a root or peer outside the communicator.

  /// `recv[i]` = `op` over every rank's `send[i]`, for i < `count`, on every rank
  /// (ncclAllReduce). `send` and `recv` may be the same memory (in place).
  template <class Send, class Recv>
  CollectiveCommand<detail::element_of<Recv>> all_reduce(
      const Communicator& comm, const Send& send, const Recv& recv, std::size_t count,
      ReduceOp op = ReduceOp::sum, std::source_location where = std::source_location::current()) {
    return record<Recv>(comm, detail::collective_spec(detail::CollectiveOp::all_reduce, send,
                                                      recv, count, op, -1),
                        where);
  }
  /// Rank `root`'s first `count` elements of `send` into `recv` on every rank
  /// (ncclBroadcast); only the root reads `send`.
  template <class Send, class Recv>
  CollectiveCommand<detail::element_of<Recv>> broadcast(
      const Communicator& comm, const Send& send, const Recv& recv, std::size_t count, int root,
      std::source_location where = std::source_location::current()) {
    return record<Recv>(comm, detail::collective_spec(detail::CollectiveOp::broadcast, send,
                                                      recv, count, ReduceOp::sum, root),
                        where);
  }
  /// As all_reduce, but only rank `root`'s `recv` receives the result (ncclReduce); the other
  /// ranks' `recv` is left as it was.
  template <class Send, class Recv>
  CollectiveCommand<detail::element_of<Recv>> reduce(
      const Communicator& comm, const Send& send, const Recv& recv, std::size_t count, ReduceOp op,
      int root, std::source_location where = std::source_location::current()) {
    return record<Recv>(comm, detail::collective_spec(detail::CollectiveOp::reduce, send,
                                                      recv, count, op, root),
                        where);
  }
  /// Every rank's first `count` elements of `send`, rank r's at `recv[r * count]`, on every
  /// rank (ncclAllGather): `recv` holds `count` * size() elements.
  template <class Send, class Recv>
  CollectiveCommand<detail::element_of<Recv>> all_gather(
      const Communicator& comm, const Send& send, const Recv& recv, std::size_t count,
      std::source_location where = std::source_location::current()) {
    return record<Recv>(comm, detail::collective_spec(detail::CollectiveOp::all_gather, send,
                                                      recv, count, ReduceOp::sum, -1),
                        where);
  }
  /// `op` over every rank's `send`, of `count` * size() elements, with rank r receiving block
  /// r (elements [r * count, (r + 1) * count)) in its first `count` elements of `recv`
  /// (ncclReduceScatter).
  template <class Send, class Recv>
  CollectiveCommand<detail::element_of<Recv>> reduce_scatter(
      const Communicator& comm, const Send& send, const Recv& recv, std::size_t count,
      ReduceOp op = ReduceOp::sum, std::source_location where = std::source_location::current()) {
    return record<Recv>(comm, detail::collective_spec(detail::CollectiveOp::reduce_scatter,
                                                      send, recv, count, op, -1),
                        where);
  }
  /// Every send_to() and recv_from() in `transfers` as one NCCL group (ncclGroupStart, each
  /// ncclSend and ncclRecv, ncclGroupEnd), so they progress together: each peer must record the
  /// matching transfers (same count and element type). At least one transfer.
  Command exchange(const Communicator& comm, std::span<const PeerTransfer> transfers,
                   std::source_location where = std::source_location::current()) {
    return Command(buffer().add_exchange(comm, transfers, where));
  }
  /// exchange() of a braced list, as in `cmd.exchange(comm, {send_to(1, a, n), recv_from(1, b,
  /// n)})`.
  Command exchange(const Communicator& comm, std::initializer_list<PeerTransfer> transfers,
                   std::source_location where = std::source_location::current()) {
    return exchange(comm, std::span<const PeerTransfer>(transfers.begin(), transfers.size()),
                    where);
  }

 private:
  Buffer& buffer() noexcept { return static_cast<Buffer&>(*this); }
  template <class Recv>
  CollectiveCommand<detail::element_of<Recv>> record(
      const Communicator& comm, const detail::CollectiveSpec& spec, std::source_location where) {
    return CollectiveCommand<detail::element_of<Recv>>(
        buffer().add_collective(comm, spec, where));
  }
};

}  // namespace cmdgraph
