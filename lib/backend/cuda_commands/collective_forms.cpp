// Collectives on a CUDA device: their check, their memory, their NCCL call on a stream.
#include "backend/cuda_commands/collective_forms.hpp"

#include <cmdgraph/config.hpp>
#if CMDGRAPH_HAVE_NCCL
#include "collective/communicator_state.hpp"
#include "cuda/nccl_ops.hpp"
#endif

namespace cmdgraph::detail {

std::vector<MemoryRange> collective_memory(const CollectivePayload& p, const ArgumentStore& args) {
  const auto& c = args.get<CollectiveSpec>(p.spec);
  if (c.op != CollectiveOp::exchange) return {c.send, c.recv};
  std::vector<MemoryRange> out;
  for (std::size_t i = 0; i < c.count; ++i) {
    out.push_back(args.get<TransferSpec>(p.transfer(i)).memory);
  }
  return out;
}

#if CMDGRAPH_HAVE_NCCL

std::optional<CollectiveRefusal> collective_refusal(const CollectivePayload& p, int device) {
  const CommunicatorState& comm = *p.comm;
  if (comm.device() != device) {
    return CollectiveRefusal{errc::device_mismatch,
                             "its communicator's rank (" + comm.describe() +
                                 ") belongs to another device"};
  }
  if (const auto failure = comm.failure()) {
    return CollectiveRefusal{errc::nccl_error, "cmdgraph aborted its communicator (" +
                                                   comm.describe() + ") after it " + failure->why};
  }
  return std::nullopt;
}

void enqueue_collective(const CollectivePayload& p, const ArgumentStore& args,
                        cudaStream_t stream, cuda::Served served) {
  CommunicatorState::Use use(*p.comm, std::string(served.name));
  const auto& c = args.get<CollectiveSpec>(p.spec);
  if (c.op != CollectiveOp::exchange) {
    cuda::nccl::run(c, use.comm(), stream, served);
    return;
  }
  std::vector<TransferSpec> transfers;
  transfers.reserve(c.count);
  for (std::size_t i = 0; i < c.count; ++i) {
    transfers.push_back(args.get<TransferSpec>(p.transfer(i)));
  }
  cuda::nccl::group_start(use.comm(), served);
  bool closed = false;
  try {
    for (const TransferSpec& t : transfers) cuda::nccl::transfer(t, use.comm(), stream, served);
    closed = true;
    cuda::nccl::group_end(use.comm(), served);
  } catch (const Error& e) {
    // The members added before the failure are enqueued when the group closes, and a send
    // with no receive (or the reverse) waits on the device for ever: only an abort ends it.
    if (!closed) cuda::nccl::close_group();
    throw use.abort_after(e);
  }
}

#else

std::optional<CollectiveRefusal> collective_refusal(const CollectivePayload&, int) {
  return CollectiveRefusal{errc::unsupported, "this build of cmdgraph has no NCCL"};
}

void enqueue_collective(const CollectivePayload&, const ArgumentStore&, cudaStream_t,
                        cuda::Served served) {
  throw Error(errc::unsupported, "command '" + std::string(served.name) +
                                     "' is a collective, and this build of cmdgraph has no NCCL",
              {std::string(served.name)});
}

#endif

}  // namespace cmdgraph::detail
