// The public Communicator: made by NCCL (all ranks of a process, or one rank of an id), or a
// view of one the caller made.
#include "collective/communicator_state.hpp"

#include "cuda/nccl_ops.hpp"

#include <algorithm>
#include <cstring>

namespace cmdgraph {
namespace {

using detail::CommunicatorState;

const CommunicatorState& open(const std::shared_ptr<CommunicatorState>& state) {
  if (!state) throw Error(errc::invalid_handle, "an empty or moved-from communicator was used");
  return *state;
}

void require_cuda(Device device, const char* what) {
  if (!device.is_cuda()) {
    throw Error(errc::invalid_argument,
                std::string(what) + ": " + device.name() + " is no CUDA device; NCCL runs on GPUs");
  }
}

}  // namespace

Communicator::Communicator() noexcept = default;
Communicator::Communicator(std::shared_ptr<detail::CommunicatorState> state) noexcept
    : state_(std::move(state)) {}
Communicator::Communicator(Communicator&&) noexcept = default;
Communicator& Communicator::operator=(Communicator&&) noexcept = default;
Communicator::~Communicator() = default;

std::vector<Communicator> Communicator::all(std::span<const Device> devices,
                                            const CommunicatorOptions& options) {
  if (devices.empty()) {
    throw Error(errc::invalid_argument, "Communicator::all: no device given");
  }
  std::vector<int> ordinals;
  for (const Device& d : devices) {
    require_cuda(d, "Communicator::all");
    if (std::find(ordinals.begin(), ordinals.end(), d.ordinal()) != ordinals.end()) {
      throw Error(errc::invalid_argument, "Communicator::all: " + d.name() +
                                              " is named twice (NCCL runs one rank per device)");
    }
    ordinals.push_back(d.ordinal());
  }
  std::vector<ncclComm_t> comms = detail::cuda::nccl::init_all(ordinals);
  std::vector<Communicator> out;
  const int size = static_cast<int>(comms.size());
  int r = 0;
  try {
    out.reserve(comms.size());
    for (; r < size; ++r) {
      out.push_back(Communicator(std::make_shared<CommunicatorState>(
          comms[r], true, ordinals[r], r, size, options.timeout)));
    }
  } catch (...) {
    for (; r < size; ++r) detail::cuda::nccl::destroy(comms[r]);  // not yet owned by a state
    throw;
  }
  return out;
}

CommunicatorId Communicator::unique_id() {
  const ncclUniqueId id = detail::cuda::nccl::unique_id();
  static_assert(sizeof(id) == sizeof(CommunicatorId::bytes));
  CommunicatorId out;
  std::memcpy(out.bytes.data(), &id, sizeof(id));
  return out;
}

Communicator::Communicator(Device device, const CommunicatorId& id, int rank, int size,
                           const CommunicatorOptions& options) {
  require_cuda(device, "Communicator");
  if (size < 1 || rank < 0 || rank >= size) {
    throw Error(errc::invalid_argument, "Communicator: rank " + std::to_string(rank) +
                                            " is outside a communicator of " +
                                            std::to_string(size) + " ranks");
  }
  ncclUniqueId nccl_id;
  std::memcpy(&nccl_id, id.bytes.data(), sizeof(nccl_id));
  ncclComm_t comm = detail::cuda::nccl::init_rank(device.ordinal(), nccl_id, rank, size);
  state_ = std::make_shared<CommunicatorState>(comm, true, device.ordinal(), rank, size,
                                               options.timeout);
}

Communicator Communicator::view(NativeCommunicator comm, const CommunicatorOptions& options) {
  if (!comm) throw Error(errc::invalid_argument, "Communicator::view of a null communicator");
  const detail::cuda::nccl::CommShape s = detail::cuda::nccl::shape_of(comm);
  return Communicator(std::make_shared<CommunicatorState>(comm, false, s.device, s.rank, s.size,
                                                          options.timeout));
}

Device Communicator::device() const { return Device::cuda(open(state_).device()); }
int Communicator::rank() const { return open(state_).rank(); }
int Communicator::size() const { return open(state_).size(); }
bool Communicator::aborted() const { return open(state_).failed(); }
NativeCommunicator Communicator::native_handle() const noexcept {
  return state_ ? state_->native() : nullptr;
}

}  // namespace cmdgraph
