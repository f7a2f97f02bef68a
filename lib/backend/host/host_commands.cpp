// Each kind of command on the host: its refusal (why it cannot run on the CPU) and its run.
#include "backend/host/host_commands.hpp"

#include "backend/host/host_launch.hpp"
#include "sync/event_state.hpp"

#include <cmdgraph/transient.hpp>

#include <algorithm>
#include <atomic>
#include <cstring>

namespace cmdgraph::detail {
namespace {

HostRefusal host_device_event(const EventState& event) {
  if (event.device().is_host()) return {};
  return {errc::device_mismatch, "its event belongs to " + event.device().name()};
}

void fill_host(const FillSpec& f) {
  auto* p = static_cast<unsigned char*>(f.dst.data);
  const std::size_t count = f.dst.bytes / f.element_size;
  switch (f.element_size) {
    case 1: std::memset(p, static_cast<int>(f.value), count); break;
    case 2: {
      const auto v = static_cast<std::uint16_t>(f.value);
      for (std::size_t i = 0; i < count; ++i) std::memcpy(p + 2 * i, &v, 2);
      break;
    }
    default:
      for (std::size_t i = 0; i < count; ++i) std::memcpy(p + 4 * i, &f.value, 4);
  }
}

// Writes the value at `v.target` atomically, with release ordering: it publishes what came
// before it, as the GPU's fenced write does.
void store_value(const ValueSpec& v) {
  if (v.target.element_size == 8) {
    std::atomic_ref<std::uint64_t>(*static_cast<std::uint64_t*>(v.target.data))
        .store(v.value, std::memory_order_release);
  } else {
    std::atomic_ref<std::uint32_t>(*static_cast<std::uint32_t*>(v.target.data))
        .store(static_cast<std::uint32_t>(v.value), std::memory_order_release);
  }
}

// The value at `v.target`, read or written atomically (release for a write, acquire for a
// read, so a write publishes what came before it, as the GPU's fenced write does).
std::uint64_t load_value(const ValueSpec& v) {
  if (v.target.element_size == 8) {
    return std::atomic_ref<std::uint64_t>(*static_cast<std::uint64_t*>(v.target.data))
        .load(std::memory_order_acquire);
  }
  return std::atomic_ref<std::uint32_t>(*static_cast<std::uint32_t*>(v.target.data))
      .load(std::memory_order_acquire);
}
// Whether the value at `v.target` satisfies the wait, compared as CUDA compares.
bool value_reached(const ValueSpec& v) {
  const std::uint64_t now = load_value(v);
  const bool wide = v.target.element_size == 8;
  switch (v.compare) {
    case ValueCompare::at_least:
      return wide ? static_cast<std::int64_t>(now - v.value) >= 0
                  : static_cast<std::int32_t>(static_cast<std::uint32_t>(now - v.value)) >= 0;
    case ValueCompare::equal: return now == v.value;
    case ValueCompare::any_bit: return (now & v.value) != 0;
  }
  return false;
}

// What the visitors below see of the command being checked or run.
struct Refuse {
  const ArgumentStore& args;

  HostRefusal operator()(const KernelPayload&) const { return global_kernel(); }
  HostRefusal operator()(const ParallelForPayload& p) const {
    if (p.host) return {};
    return {errc::unsupported, "its functor has no host version (__device__ only)"};
  }
  HostRefusal operator()(const CopyPayload& p) const {
    const auto& copy = args.get<CopySpec>(p.spec);
    HostRefusal r = host_memory_refusal(copy.dst);
    return r ? r : host_memory_refusal(copy.src);
  }
  HostRefusal operator()(const FillPayload& p) const {
    return host_memory_refusal(args.get<FillSpec>(p.spec).dst);
  }
  HostRefusal operator()(const HostPayload&) const { return {}; }
  HostRefusal operator()(const EventRecordPayload& p) const { return host_device_event(*p.event); }
  HostRefusal operator()(const EventWaitPayload& p) const { return host_device_event(*p.event); }
  HostRefusal operator()(const NestedPayload&) const { return {}; }
  HostRefusal operator()(const CapturePayload&) const {
    return {errc::unsupported, "stream capture needs a CUDA device"};
  }
  HostRefusal operator()(const BarrierPayload&) const { return {}; }
  HostRefusal operator()(const CollectivePayload&) const {
    return {errc::unsupported, "a collective runs through NCCL on a CUDA device"};
  }
  HostRefusal operator()(const LoopPayload& p) const { return condition(p.condition); }
  HostRefusal operator()(const IfPayload& p) const { return condition(p.condition); }
  HostRefusal operator()(const AllocPayload&) const { return {}; }
  HostRefusal operator()(const FreePayload&) const { return {}; }
  HostRefusal operator()(const IfElsePayload& p) const { return condition(p.condition); }
  HostRefusal operator()(const SwitchPayload& p) const { return condition(p.condition); }
  HostRefusal operator()(const WriteValuePayload& p) const {
    return host_memory_refusal(args.get<ValueSpec>(p.spec).target);
  }
  HostRefusal operator()(const WaitValuePayload& p) const {
    return host_memory_refusal(args.get<ValueSpec>(p.spec).target);
  }
  HostRefusal operator()(const IndirectPayload& p) const {
    const auto& spec = args.get<IndirectSpec>(p.spec);
    if (!runs_items(spec.form)) return global_kernel();
    if (!p.host) return {errc::unsupported, "its functor has no host version (__device__ only)"};
    return host_memory_refusal(spec.source);
  }
  static HostRefusal global_kernel() {
    return {errc::unsupported,
            "a __global__ kernel needs a CUDA device (record it as parallel_for to run it on both)"};
  }
  static HostRefusal condition(const Condition& c) {
    if (c.host) return {};
    return {errc::unsupported,
            "its condition or selector has no host version (__device__ only)"};
  }
};

struct Run {
  HostLaunch& launch;
  std::uint32_t task;
  const ArgumentStore& args;

  HostOutcome operator()(const KernelPayload&) const { return HostOutcome::failed; }  // refused
  HostOutcome operator()(const ParallelForPayload& p) const {
    return launch.run_parallel_for(task, p.host, p.functor, args.get<std::size_t>(p.count()));
  }
  // Refused with a grid (a __global__ kernel); a count or a flag is read as the command runs.
  HostOutcome operator()(const IndirectPayload& p) const {
    const auto& spec = args.get<IndirectSpec>(p.spec);
    const std::uint64_t read = load_value({spec.source, 0, false, ValueCompare::equal});
    if (reads_flag(spec.form)) {
      if (read == 0) return HostOutcome::ok;
      return launch.run_parallel_for(task, p.host, p.first_param(), spec.max_count);
    }
    const std::uint64_t count = std::min(read, spec.max_count);
    launch.note_dispatch(task, read, count != read);
    if (count == 0) return HostOutcome::ok;
    return launch.run_parallel_for(task, p.host, p.first_param(), count);
  }
  HostOutcome operator()(const CopyPayload& p) const {
    const auto& c = args.get<CopySpec>(p.spec);
    std::memmove(c.dst.data, c.src.data, c.dst.bytes);
    return HostOutcome::ok;
  }
  HostOutcome operator()(const FillPayload& p) const {
    fill_host(args.get<FillSpec>(p.spec));
    return HostOutcome::ok;
  }
  HostOutcome operator()(const HostPayload& p) const {
    try {
      p.task->run();
      return HostOutcome::ok;
    } catch (...) {
      launch.fail(task, "host task");
      return HostOutcome::failed;
    }
  }
  HostOutcome operator()(const EventRecordPayload& p) const {
    launch.record_event(task, *p.event);
    return HostOutcome::ok;
  }
  HostOutcome operator()(const EventWaitPayload& p) const {
    return launch.wait_for_event(task, *p.event);
  }
  HostOutcome operator()(const NestedPayload&) const {
    return HostOutcome::ok;  // expanded into join tasks by flatten()
  }
  HostOutcome operator()(const CapturePayload&) const { return HostOutcome::failed; }  // refused
  HostOutcome operator()(const BarrierPayload&) const { return HostOutcome::ok; }
  template <class P>
  HostOutcome conditional(const P& p) const {
    return launch.run_conditional(task, p.condition, P::branching);
  }
  HostOutcome operator()(const CollectivePayload&) const { return HostOutcome::failed; }  // refused
  // The executable placed its transients in its arena when compiled: ordering only.
  HostOutcome operator()(const AllocPayload&) const { return HostOutcome::ok; }
  HostOutcome operator()(const FreePayload&) const { return HostOutcome::ok; }
  HostOutcome operator()(const LoopPayload& p) const { return conditional(p); }
  HostOutcome operator()(const IfPayload& p) const { return conditional(p); }
  HostOutcome operator()(const IfElsePayload& p) const { return conditional(p); }
  HostOutcome operator()(const SwitchPayload& p) const { return conditional(p); }
  HostOutcome operator()(const WriteValuePayload& p) const {
    store_value(args.get<ValueSpec>(p.spec));
    return HostOutcome::ok;
  }
  HostOutcome operator()(const WaitValuePayload& p) const {
    return launch.wait_until(task, [v = args.get<ValueSpec>(p.spec)] { return value_reached(v); });
  }
};

}  // namespace

HostRefusal host_memory_refusal(const MemoryRange& r) {
  // Transient memory lives where the executable runs: in host memory here.
  if (r.space != MemorySpace::device || r.device == transient_device) return {};
  return {errc::device_mismatch, "it touches memory of cuda:" + std::to_string(r.device) +
                                     ", which the CPU cannot access"};
}

HostRefusal host_refusal(const Payload& payload, const ArgumentStore& args) {
  return std::visit(Refuse{args}, payload);
}

HostOutcome run_on_host(const Payload& payload, HostLaunch& launch, std::uint32_t task,
                        const ArgumentStore& args) {
  return std::visit(Run{launch, task, args}, payload);
}

}  // namespace cmdgraph::detail
