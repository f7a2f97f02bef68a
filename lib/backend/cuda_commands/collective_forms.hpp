// What a collective is on a CUDA device: whether it can run there, the memory it touches, and
// its NCCL call on a stream: the stream form itself, and what stream capture turns into the
// graph form's child graph. In builds without NCCL no collective can be recorded, and these
// refuse.
#pragma once

#include "command/payloads.hpp"
#include "cuda/check.hpp"

#include <cmdgraph/error.hpp>

#include <cuda_runtime_api.h>

#include <optional>
#include <string>
#include <vector>

namespace cmdgraph::detail {

/// Why collective `p` cannot run on CUDA device `device` (its communicator's rank is on
/// another device, or was aborted), or nullopt.
struct CollectiveRefusal {
  errc code;
  std::string why;
};
std::optional<CollectiveRefusal> collective_refusal(const CollectivePayload& p, int device);

/// The memory collective `p` reads and writes, with the values in `args`.
std::vector<MemoryRange> collective_memory(const CollectivePayload& p, const ArgumentStore& args);

/// Enqueues collective `p` with the values in `args` on `stream` (an exchange as one NCCL
/// group). Throws Error(nccl_error) naming the command once its communicator was aborted.
void enqueue_collective(const CollectivePayload& p, const ArgumentStore& args,
                        cudaStream_t stream, cuda::Served served);

}  // namespace cmdgraph::detail
