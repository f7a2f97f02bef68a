// Each kind of command on a CUDA device: can it run there, where it sits (the memory it
// touches, its events, its device code, its bodies).
#include "backend/cuda_commands/cuda_commands.hpp"

#include "backend/cuda_commands/collective_forms.hpp"
#include "backend/cuda_rules.hpp"
#include "cuda/runtime.hpp"
#include "sync/event_state.hpp"

#include <cmdgraph/error.hpp>
#include <cmdgraph/transient.hpp>

#include <string>

namespace cmdgraph::detail {
namespace {

// ---- Checks: can the command run on this device, where it sits? ----

// What this device needs of each command (where a command sits, cuda_rules checked first).
class Check {
 public:
  Check(const Plan& plan, std::uint32_t c, const Plan& root, int device)
      : plan_(plan), c_(c), root_(root), device_(device) {}

  void operator()(const KernelPayload&) const {}
  void operator()(const ParallelForPayload& p) const {
    if (!p.device_kernel) {
      refuse(errc::unsupported,
             "its functor has no device version (record it in a translation unit compiled by "
             "nvcc, with a __host__ __device__ call operator)");
    }
  }
  void operator()(const CopyPayload& p) const {
    const auto& copy = plan_.arguments().get<CopySpec>(p.spec);
    memory(copy.dst, true);
    memory(copy.src, true);
  }
  void operator()(const FillPayload& p) const {
    memory(plan_.arguments().get<FillSpec>(p.spec).dst, false);
  }
  void operator()(const HostPayload&) const {}
  void operator()(const EventRecordPayload& p) const { event(*p.event, false); }
  void operator()(const EventWaitPayload& p) const { event(*p.event, true); }
  void operator()(const NestedPayload&) const { bodies(); }
  void operator()(const CapturePayload&) const {}
  void operator()(const BarrierPayload&) const {}
  void operator()(const LoopPayload& p) const { conditional(p.condition); }
  void operator()(const IfPayload& p) const { conditional(p.condition); }
  void operator()(const CollectivePayload& p) const {
    if (const auto refusal = collective_refusal(p, device_)) refuse(refusal->code, refusal->why);
    for (const MemoryRange& r : collective_memory(p, plan_.arguments())) memory(r, false);
  }
  // Recorded only at the top of the buffer compiled (the recording refuses them in bodies).
  void operator()(const AllocPayload&) const {}
  void operator()(const FreePayload&) const {}
  void operator()(const IfElsePayload& p) const { conditional(p.condition); }
  void operator()(const SwitchPayload& p) const { conditional(p.condition); }
  void operator()(const WriteValuePayload& p) const {
    memory(plan_.arguments().get<ValueSpec>(p.spec).target, false);
  }
  void operator()(const WaitValuePayload& p) const {
    memory(plan_.arguments().get<ValueSpec>(p.spec).target, false);
  }
  void operator()(const IndirectPayload& p) const {
    if (!p.function) {
      refuse(errc::unsupported,
             "its functor has no device version (record it in a translation unit compiled by "
             "nvcc, with a __host__ __device__ call operator)");
    }
    memory(plan_.arguments().get<IndirectSpec>(p.spec).source, false);
  }

  /// Checks every command of `plan`.
  static void all(const Plan& plan, const Plan& root, int device) {
    for (std::uint32_t c = 0; c < plan.size(); ++c) {
      std::visit(Check(plan, c, root, device), plan.payload(c));
    }
  }

  // A device reaches host memory and its own (a memory operation pinned host memory only); a
  // copy may also reach another GPU (a peer copy), for which peer access is opened here.
  void memory(const MemoryRange& r, bool peer_allowed) const {
    if (std::string why = cuda_memory_breach(plan_.kind(c_), r); !why.empty()) {
      refuse(errc::unsupported, why);
    }
    // Transient memory is the executing device's own.
    if (r.space != MemorySpace::device || r.device == device_ || r.device == transient_device) {
      return;
    }
    if (r.device < 0 || r.device >= cuda::device_count()) {
      refuse(errc::device_mismatch,
             "it touches memory of cuda:" + std::to_string(r.device) + ", which does not exist");
    }
    if (!peer_allowed) {
      refuse(errc::device_mismatch,
             "it touches memory of cuda:" + std::to_string(r.device) + " but runs on cuda:" +
                 std::to_string(device_) + " (only copies reach another device)");
    }
    cuda::open_peer_access(device_, r.device, command_label(plan_, c_, root_));
  }

  [[noreturn]] void refuse(errc code, const std::string& why) const {
    const std::string name = command_label(plan_, c_, root_);
    throw Error(code, "command '" + name + "' cannot run on this CUDA device: " + why, {name});
  }

 private:
  // A device records only its own events but may wait for any GPU's, as a stream may.
  void event(const EventState& e, bool waits) const {
    const Device d = e.device();
    if (!d.is_cuda() || (d.ordinal() != device_ && !waits)) {
      refuse(errc::device_mismatch,
             "its event belongs to " + d.name() +
                 (d.is_cuda() ? " (a device records only its own events)" : ""));
    }
  }
  void bodies() const {
    for (const auto& body : plan_.bodies_of(c_)) all(*body, root_, device_);
  }
  // A command that runs its body through a conditional node.
  void conditional(const Condition& condition) const {
    if (!condition.device_kernel) {
      refuse(errc::unsupported,
             "its condition or selector has no device version (record it in a translation unit "
             "compiled by nvcc, with a __host__ __device__ call operator)");
    }
    bodies();
  }

  const Plan& plan_;
  std::uint32_t c_;
  const Plan& root_;
  int device_;
};

}  // namespace

void check_runs_on_device(const Plan& plan, int device) {
  if (const auto breach = cuda_structure_breach(plan)) {
    throw Error(errc::unsupported,
                "command '" + breach->command + "' cannot run on this CUDA device: " + breach->why,
                {breach->command});
  }
  Check::all(plan, plan, device);
}

void check_device_memory(const Plan& plan, std::uint32_t c, const MemoryRange& r, int device) {
  Check(plan, c, plan, device).memory(r, traits(plan.kind(c)).reaches_peers);
}

}  // namespace cmdgraph::detail
