// The command table: one payload struct per kind of command, each carrying its kind's facts
// (KindTraits) beside what it stores. A command's kind *is* the index of its payload in
// Payload, so the kind is never stored twice and std::visit reaches every kind.
#pragma once

#include "command/memory_access.hpp"
#include "command/argument_store.hpp"
#include "command/conditional_payloads.hpp"
#include "command/kind_traits.hpp"
#include "command/transient_payloads.hpp"
#include "command/transient_range.hpp"
#include "command/value_payloads.hpp"

#include <cmdgraph/detail/collectives.hpp>
#include <cmdgraph/detail/specs.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <variant>
#include <vector>

namespace cmdgraph::detail {

class CommunicatorState;  // collective/: one rank of an NCCL communicator (builds with NCCL)
class EventState;  // sync/: what an Event is on its device
class Recording;   // record/: a sealed secondary buffer or conditional body; backends reach
                   // its plan through Plan::bodies_of(c), never the recording itself
class UpdateSite;  // command/update_site.hpp: what an update hook checks and writes through
class RecordSite;  // command/record_site.hpp: what a recording hook checks and stores through

// Payloads keep what never changes; values update() may change live in the ArgumentStore and
// are named by slot. A kind recorded from plain values (CommandBuffer::add_command) has the
// hook `static P record(RecordSite&, const CommandValues&)`: it checks the values and stores
// them. A kind updated through its handle has the hook
// `void update(UpdateSite&, const CommandValues&) const` (command/kind_hooks.cpp): it checks the
// new values as recording checked them, writes them and applies them. Two payloads compare
// equal when they run the same thing given the same values: the same code, objects and slots
// (an update by a re-recorded buffer changes only the values of such commands in place).

/// Where a launch()'s values lie in the argument store: its configuration, then one slot per
/// parameter of `function`.
struct KernelSlots {
  const void* function;
  ArgumentStore::Slot config;
  ArgumentStore::Slot first_param;
  std::uint32_t param_count;
  const std::type_info* signature;  // the kernel's typeid
};

struct KernelPayload {
  static constexpr KindTraits traits{.kind = CommandKind::kernel, .name = "kernel",
                                     .dot_shape = "box", .runs_device_code = true,
                                     .updatable = true, .declares_access = true,
                                     .programmatic = true};
  const void* function;             // the __global__ function's host stub
  ArgumentStore::Slot config;       // LaunchConfig
  ArgumentStore::Slot first_param;  // then param_count consecutive slots
  std::uint32_t param_count;
  const std::type_info* signature;  // the kernel's typeid: typed handles must match it
  const void* code() const noexcept { return function; }
  KernelSlots kernel_slots() const noexcept {
    return {function, config, first_param, param_count, signature};
  }
  /// New arguments (KernelArguments) or a new LaunchConfig.
  void update(UpdateSite& site, const CommandValues& values) const;
  bool operator==(const KernelPayload&) const = default;
};

struct ParallelForPayload {
  static constexpr KindTraits traits{.kind = CommandKind::parallel_for, .name = "parallel_for",
                                     .dot_shape = "box", .runs_device_code = true,
                                     .updatable = true, .declares_access = true,
                                     .programmatic = true};
  ArgumentStore::Slot functor;  // the kernel's (f, n): functor, then the count (std::size_t)
  HostInvoke host;              // null when the functor has no host version
  const void* device_kernel;    // null when not recorded in a CUDA translation unit
  const std::type_info* type;   // the functor's typeid: typed handles must match it
  ArgumentStore::Slot count() const noexcept { return functor + 1; }
  const void* code() const noexcept { return device_kernel; }
  /// A new functor, and maybe a new count (ParallelForValues).
  void update(UpdateSite& site, const CommandValues& values) const;
  bool operator==(const ParallelForPayload&) const = default;
};

struct CopyPayload {
  static constexpr KindTraits traits{.kind = CommandKind::copy, .name = "copy",
                                     .dot_shape = "cds", .updatable = true,
                                     .reaches_peers = true};
  ArgumentStore::Slot spec;  // CopySpec
  static CopyPayload record(RecordSite& site, const CommandValues& values);
  /// Reads its source, writes its destination.
  void implied_access(const ArgumentStore& values, std::vector<MemoryAccess>& out) const;
  /// A new CopySpec of the same element size.
  void update(UpdateSite& site, const CommandValues& values) const;
  bool operator==(const CopyPayload&) const = default;
};

struct FillPayload {
  static constexpr KindTraits traits{.kind = CommandKind::fill, .name = "fill",
                                     .dot_shape = "box3d", .updatable = true};
  ArgumentStore::Slot spec;  // FillSpec
  static FillPayload record(RecordSite& site, const CommandValues& values);
  /// Writes its destination.
  void implied_access(const ArgumentStore& values, std::vector<MemoryAccess>& out) const;
  /// A new FillSpec of the same element size.
  void update(UpdateSite& site, const CommandValues& values) const;
  bool operator==(const FillPayload&) const = default;
};

struct HostPayload {
  static constexpr KindTraits traits{.kind = CommandKind::host, .name = "host",
                                     .dot_shape = "ellipse", .in_device_loop = false,
                                     .declares_access = true};
  std::shared_ptr<HostTask> task;  // shared by the recording and every executable
  const std::shared_ptr<HostTask>& host_task() const noexcept { return task; }
  bool operator==(const HostPayload&) const = default;
};

struct EventRecordPayload {
  static constexpr KindTraits traits{.kind = CommandKind::event_record, .name = "record",
                                     .dot_shape = "diamond", .weight = 0,
                                     .in_device_loop = false};
  std::shared_ptr<EventState> event;
  const std::shared_ptr<EventState>& recorded_event() const noexcept { return event; }
  bool operator==(const EventRecordPayload&) const = default;
};

struct EventWaitPayload {
  static constexpr KindTraits traits{.kind = CommandKind::event_wait, .name = "wait",
                                     .dot_shape = "diamond", .weight = 0,
                                     .in_device_loop = false};
  std::shared_ptr<EventState> event;
  const std::shared_ptr<EventState>& awaited_event() const noexcept { return event; }
  bool operator==(const EventWaitPayload&) const = default;
};

struct NestedPayload {
  static constexpr KindTraits traits{.kind = CommandKind::nested, .name = "execute",
                                     .dot_shape = "folder", .expands = true};
  std::shared_ptr<const Recording> body;
  bool operator==(const NestedPayload&) const = default;
  bool equal_but_bodies(const NestedPayload&) const noexcept { return true; }
};

struct CapturePayload {
  static constexpr KindTraits traits{.kind = CommandKind::capture, .name = "capture",
                                     .dot_shape = "component", .runs_device_code = true,
                                     .in_device_loop = false, .declares_access = true,
                                     .captured = true};
  std::shared_ptr<CaptureTask> task;
  CaptureTask* capture_task() const noexcept { return task.get(); }
  bool operator==(const CapturePayload&) const = default;
};

struct BarrierPayload {
  static constexpr KindTraits traits{.kind = CommandKind::barrier, .name = "barrier",
                                     .dot_shape = "point", .weight = 0,
                                     .in_device_graph = false};
  bool operator==(const BarrierPayload&) const = default;
};

/// An NCCL collective, or a group of sends and receives (exchange), on one rank of a
/// communicator. Only recorded in builds with NCCL.
struct CollectivePayload {
  static constexpr KindTraits traits{.kind = CommandKind::collective, .name = "collective",
                                     .dot_shape = "hexagon", .runs_device_code = true,
                                     .updatable = true, .in_device_loop = false,
                                     .captured = true};
  std::shared_ptr<CommunicatorState> comm;  // shared by the recording and every executable
  ArgumentStore::Slot spec;  // CollectiveSpec; for exchange, spec.count TransferSpecs follow
  int ranks, rank, device;   // the communicator's size, this rank and its CUDA device
  ArgumentStore::Slot transfer(std::size_t i) const noexcept {
    return spec + 1 + static_cast<ArgumentStore::Slot>(i);
  }
  const std::shared_ptr<CommunicatorState>& communicator() const noexcept { return comm; }
  /// Reads its source, writes its destination (each transfer of an exchange likewise).
  void implied_access(const ArgumentStore& values, std::vector<MemoryAccess>& out) const;
  /// New send, recv and count (a CollectiveSpec); not for an exchange.
  void update(UpdateSite& site, const CommandValues& values) const;
  bool operator==(const CollectivePayload&) const = default;
};

/// A kernel or parallel_for whose size is read from memory as it runs (launch_indirect,
/// parallel_for_indirect): a grid clamped to its largest, or a count to its most. Its
/// parameters follow its IndirectSpec: the kernel's, or the parallel_for's (functor, count).
struct IndirectPayload {
  static constexpr KindTraits traits{.kind = CommandKind::indirect, .name = "indirect",
                                     .dot_shape = "box", .runs_device_code = true,
                                     .declares_access = true, .sized_on_device = true};
  const void* function;             // the kernel, or the parallel_for's device kernel (or null)
  HostInvoke host;                  // a parallel_for's host version, else null
  ArgumentStore::Slot spec;         // IndirectSpec
  std::uint32_t param_count;        // parameters, in the slots after spec
  const std::type_info* signature;  // the kernel's or the functor's typeid
  ArgumentStore::Slot first_param() const noexcept { return spec + 1; }
  const void* code() const noexcept { return function; }
  /// Reads its source.
  void implied_access(const ArgumentStore& values, std::vector<MemoryAccess>& out) const;
  bool operator==(const IndirectPayload&) const = default;
};

/// Every kind of command, in CommandKind's order.
using Payload = std::variant<KernelPayload, ParallelForPayload, CopyPayload, FillPayload,
                             HostPayload, EventRecordPayload, EventWaitPayload, NestedPayload,
                             CapturePayload, BarrierPayload, LoopPayload, IfPayload,
                             IfElsePayload, SwitchPayload, CollectivePayload, AllocPayload,
                             FreePayload, WriteValuePayload, WaitValuePayload,
                             IndirectPayload>;

/// Appends what command `payload` touches by its nature (a copy's source and destination, a
/// fill's destination) to `out`; nothing for other kinds.
void add_implied_access(const Payload& payload, const ArgumentStore& values,
                        std::vector<MemoryAccess>& out);

/// The facts of every kind, indexed by CommandKind.
inline constexpr auto kind_table = []<std::size_t... I>(std::index_sequence<I...>) {
  return std::array<KindTraits, sizeof...(I)>{std::variant_alternative_t<I, Payload>::traits...};
}(std::make_index_sequence<std::variant_size_v<Payload>>{});

// The kind is the payload's index: each payload must sit at its own kind's place.
static_assert([] {
  for (std::size_t i = 0; i < kind_table.size(); ++i) {
    if (static_cast<std::size_t>(kind_table[i].kind) != i) return false;
  }
  return true;
}());

template <class P>
concept UpdatedByHandles = requires(const P& p, UpdateSite& site, const CommandValues& values) {
  p.update(site, values);
};
// A kind is updatable exactly when its payload has the update hook.
static_assert([]<std::size_t... I>(std::index_sequence<I...>) {
  return ((UpdatedByHandles<std::variant_alternative_t<I, Payload>> ==
           kind_table[I].updatable) && ...);
}(std::make_index_sequence<std::variant_size_v<Payload>>{}));

template <class P>
concept RecordedFromValues = requires(RecordSite& site, const CommandValues& values) {
  { P::record(site, values) } -> std::same_as<P>;
};

/// The payload of a command of `kind` recorded from `values` by its kind's recording hook.
/// \pre `kind` is recorded from values (RecordedFromValues).
inline Payload record_command(CommandKind kind, RecordSite& site, const CommandValues& values) {
  using Record = Payload (*)(RecordSite&, const CommandValues&);
  static constexpr auto table = []<std::size_t... I>(std::index_sequence<I...>) {
    return std::array<Record, sizeof...(I)>{
        [](RecordSite& s, const CommandValues& v) -> Payload {
          using P = std::variant_alternative_t<I, Payload>;
          if constexpr (RecordedFromValues<P>) {
            return P::record(s, v);
          } else {
            throw std::logic_error("cmdgraph: a kind without a recording hook was recorded");
          }
        }...};
  }(std::make_index_sequence<std::variant_size_v<Payload>>{});
  return table[static_cast<std::size_t>(kind)](site, values);
}

/// Runs `payload`'s update hook with `values` (a kind updatable through its handle).
inline void update_command(const Payload& payload, UpdateSite& site,
                           const CommandValues& values) {
  std::visit(
      [&](const auto& p) {
        if constexpr (UpdatedByHandles<std::remove_cvref_t<decltype(p)>>) p.update(site, values);
      },
      payload);
}

inline CommandKind kind_of(const Payload& payload) noexcept {
  return static_cast<CommandKind>(payload.index());
}
inline const KindTraits& traits(CommandKind kind) noexcept {
  return kind_table[static_cast<std::size_t>(kind)];
}
inline const KindTraits& traits_of(const Payload& payload) noexcept {
  return kind_table[payload.index()];
}

/// The recordings a command runs as its bodies: an executed buffer's one, a conditional
/// command's (in its kind's order); empty for other kinds.
inline std::span<const std::shared_ptr<const Recording>> bodies_of(
    const Payload& payload) noexcept {
  return std::visit(
      [](const auto& p) -> std::span<const std::shared_ptr<const Recording>> {
        if constexpr (requires { p.bodies; }) {
          return p.bodies;
        } else if constexpr (requires { p.body; }) {
          return {&p.body, 1};
        } else {
          return {};
        }
      },
      payload);
}

/// Whether two payloads are equal but for the recordings they run as bodies (as many of them
/// on either side), which the caller then compares body by body.
inline bool equal_but_bodies(const Payload& a, const Payload& b) {
  if (a.index() != b.index()) return false;
  return std::visit(
      [&b](const auto& p) {
        const auto& q = *std::get_if<std::remove_cvref_t<decltype(p)>>(&b);
        if constexpr (requires { p.equal_but_bodies(q); }) {
          return p.equal_but_bodies(q);
        } else {
          return p == q;
        }
      },
      a);
}

/// The device code a command runs, for telling whether two recordings run the same kernels
/// (null for kinds without their own kernel).
inline const void* code_of(const Payload& payload) noexcept {
  return std::visit(
      [](const auto& p) -> const void* {
        if constexpr (requires { p.code(); }) {
          return p.code();
        } else {
          return nullptr;
        }
      },
      payload);
}

// ---- Hooks: questions only some kinds answer, each answered by a member of their payloads ----

namespace table_detail {
// What `hook` answers for `payload`, or a value-initialised R for kinds it does not apply to.
template <class R, class Hook>
R answer(const Payload& payload, Hook hook) noexcept {
  return std::visit(
      [&](const auto& p) -> R {
        if constexpr (std::is_invocable_v<Hook&, decltype(p)>) {
          return hook(p);
        } else {
          return R{};
        }
      },
      payload);
}
}  // namespace table_detail

/// The event a command records (record()), else null.
inline std::shared_ptr<EventState> recorded_event(const Payload& payload) noexcept {
  return table_detail::answer<std::shared_ptr<EventState>>(
      payload, [](const auto& p) -> decltype(p.recorded_event()) { return p.recorded_event(); });
}
/// The event a command waits for (wait()), else null.
inline std::shared_ptr<EventState> awaited_event(const Payload& payload) noexcept {
  return table_detail::answer<std::shared_ptr<EventState>>(
      payload, [](const auto& p) -> decltype(p.awaited_event()) { return p.awaited_event(); });
}
/// The callable a command runs on the host (host()), else null.
inline std::shared_ptr<HostTask> host_task(const Payload& payload) noexcept {
  return table_detail::answer<std::shared_ptr<HostTask>>(
      payload, [](const auto& p) -> decltype(p.host_task()) { return p.host_task(); });
}
/// The callable stream capture makes a graph of (capture()), else null.
inline CaptureTask* capture_task(const Payload& payload) noexcept {
  return table_detail::answer<CaptureTask*>(
      payload, [](const auto& p) -> decltype(p.capture_task()) { return p.capture_task(); });
}
/// The communicator a command runs a collective on, else null.
inline std::shared_ptr<CommunicatorState> communicator(const Payload& payload) noexcept {
  return table_detail::answer<std::shared_ptr<CommunicatorState>>(
      payload, [](const auto& p) -> decltype(p.communicator()) { return p.communicator(); });
}
/// The transient memory a command allocates (alloc()), else null.
inline std::shared_ptr<const TransientRange> allocated(const Payload& payload) noexcept {
  return table_detail::answer<std::shared_ptr<const TransientRange>>(
      payload, [](const auto& p) -> decltype(p.allocated()) { return p.allocated(); });
}
/// The command whose allocation a command frees (free()), else nullopt.
inline std::optional<std::uint32_t> freed_allocation(const Payload& payload) noexcept {
  return table_detail::answer<std::optional<std::uint32_t>>(
      payload,
      [](const auto& p) -> decltype(p.freed_allocation()) { return p.freed_allocation(); });
}

/// Where a launch()'s values lie (a kernel command), else nullopt.
inline std::optional<KernelSlots> kernel_slots(const Payload& payload) noexcept {
  return table_detail::answer<std::optional<KernelSlots>>(
      payload, [](const auto& p) -> decltype(p.kernel_slots()) { return p.kernel_slots(); });
}

}  // namespace cmdgraph::detail
