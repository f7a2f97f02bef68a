// Command handles: cheap values naming one recorded command, with fluent edges, names and
// declared access.
#pragma once

#include <cmdgraph/launch_config.hpp>
#include <cmdgraph/memory.hpp>
#include <cmdgraph/priority.hpp>

#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <ranges>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cmdgraph {

/// What a command does.
enum class CommandKind : unsigned char {
  kernel, parallel_for, copy, fill, host, event_record, event_wait, nested, capture, barrier,
  loop, if_then, if_else, switch_on,
  collective,  ///< an NCCL collective or group of peer transfers (builds with NCCL)
  alloc, free,
  write_value,  ///< a 32- or 64-bit value written once the work before it is done
  wait_value,   ///< what follows waits until a 32- or 64-bit value in memory is reached
  indirect,     ///< a kernel or parallel_for sized by a grid or count read as it runs
};
/// The kind's name as the enumerator spells it, e.g. "parallel_for"; never null.
const char* to_string(CommandKind kind) noexcept;

/// How a wait for a value compares the value in memory with the one it waits for.
enum class ValueCompare : unsigned char {
  /// Until (signed)(memory - value) >= 0: CUDA's wrapping comparison, so a counter that
  /// passes the largest value and starts again from 0 is still at least its earlier values.
  at_least,
  equal,    ///< until memory == value
  any_bit,  ///< until (memory & value) != 0
};

/// What an edge promises the command after it.
enum class EdgeKind : unsigned char {
  /// The child starts once the parent has finished and its writes are visible.
  full,
  /// Programmatic dependent launch (compute capability 9.0 and up): the child kernel may be
  /// launched while the parent kernel still runs, so its launch overlaps the parent's tail.
  /// Every thread of the child must call cudaGridDependencySynchronize() before it touches
  /// memory its parents touch, and before it returns: that call waits until the parents have
  /// finished and their writes are visible. A parent may call
  /// cudaTriggerProgrammaticLaunchCompletion() to let its children launch earlier still. Joins
  /// two kernels (launch, or parallel_for, whose kernel synchronises first); on the host
  /// backend, when profiled with timed events (ProfileMode::events) and under
  /// CompileOptions::programmatic_edges = false it is a full edge.
  programmatic,
};

namespace detail {
/// The identity of a command: its recording (a process-unique id, never reused) and index.
struct CommandRef {
  std::uint64_t recording = 0;
  std::uint32_t index = 0;
  friend bool operator==(const CommandRef&, const CommandRef&) = default;
};
/// What priority() asked for: a Priority, or a CUDA priority value.
struct PriorityRequest {
  bool native = false;  // `value` is a CUDA priority, else a Priority
  int value = 0;
  friend bool operator==(const PriorityRequest&, const PriorityRequest&) = default;
};
// Implemented by lib/record; each validates the handles and throws Error on misuse.
// add_edges validates every parent before adding any edge: a refused call records nothing.
void add_edges(CommandRef child, const CommandRef* parents, std::size_t count,
               EdgeKind kind = EdgeKind::full);
void set_name(CommandRef command, std::string_view name);
void set_priority(CommandRef command, PriorityRequest priority);
void set_cost(CommandRef command, std::chrono::nanoseconds cost);
void set_programmatic_safe(CommandRef command);
void set_update_free(CommandRef command);
std::string command_name(CommandRef command);

/// How a command touches memory it declares.
enum class AccessMode : unsigned char { read = 1, write = 2, read_write = 3 };
/// One declaration, type-erased: the bytes touched, where the view was cut from (errors give
/// element ranges from there) and an optional label for errors and DOT.
struct AccessDeclaration {
  const void* data;
  std::size_t bytes;
  const void* origin;
  std::size_t element_size;
  MemorySpace space;
  int device;
  AccessMode mode;
  std::string_view label;
};
// Implemented by lib/record: validates the handle, the kind and the range, then records it.
void declare_access(CommandRef command, const AccessDeclaration& access);

template <class T>
View<T> memory_view(const View<T>& v) noexcept {
  return v;
}
template <class T>
View<T> memory_view(const OwnedMemory<T>& m) noexcept {
  return m.view();
}
template <class T>
AccessDeclaration access_of(const View<T>& v, AccessMode mode, std::string_view label) noexcept {
  return {v.data(), v.size_bytes(), v.origin(), sizeof(T), v.space(), v.device_ordinal(),
          mode, label};
}
}  // namespace detail

/// Anything that names a recorded command (Command and the typed handles).
template <class C>
concept AnyCommand = requires(const C& c) {
  { c.ref() } -> std::same_as<detail::CommandRef>;
};

/// Shared face of every handle (`Self` is the handle type, so chained calls keep it). A handle
/// is valid while its command buffer's recording lives; using a default-constructed, moved-from
/// or stale handle throws Error. Handles are cheap values; copying one never copies a command.
template <class Self>
class BasicCommand {
 public:
  /// An invalid handle: valid() is false and every other use throws Error(invalid_handle).
  BasicCommand() = default;
  /// Copies name the same command.
  BasicCommand(const BasicCommand&) = default;
  /// Makes this handle name the other one's command.
  BasicCommand& operator=(const BasicCommand&) = default;
  /// A moved-from handle becomes invalid, so later use is reported rather than silently
  /// aliasing the original.
  BasicCommand(BasicCommand&& other) noexcept : ref_(std::exchange(other.ref_, {})) {}
  /// As the move constructor: this handle takes `other`'s command, `other` becomes invalid.
  BasicCommand& operator=(BasicCommand&& other) noexcept {
    ref_ = std::exchange(other.ref_, {});
    return *this;
  }

  /// This command runs after every one of `parents` (edges parent -> this).
  /// \pre This handle and every parent name commands of one live recording that compile()
  /// has not sealed. Else nothing changes and it throws Error: invalid_handle (a default or
  /// moved-from handle), stale_handle (the recording was reset or destroyed), foreign_handle
  /// (a parent of another command buffer), wrong_state (sealed), self_edge (a parent is this
  /// command).
  /// \post The edges exist; adding an edge twice keeps one. Returns this handle.
  template <AnyCommand... Parents>
  Self& after(const Parents&... parents) & {
    const detail::CommandRef refs[] = {parents.ref()..., detail::CommandRef{}};
    detail::add_edges(ref_, refs, sizeof...(Parents));
    return self();
  }
  /// after() on a temporary handle, as in `cmd.host(f).after(a)`; returns it as an rvalue.
  template <AnyCommand... Parents>
  Self&& after(const Parents&... parents) && {
    return std::move(after(parents...));
  }
  /// This command runs after `parent` through an edge of `kind`: after(a, EdgeKind::full) is
  /// after(a); after(a, EdgeKind::programmatic) lets this kernel launch while kernel `a` still
  /// runs (see EdgeKind::programmatic for what the kernels must do).
  /// \pre As after(); for a programmatic edge both commands run one kernel (launch,
  /// parallel_for), else Error(invalid_argument) naming both and nothing changes.
  /// \post The edge exists; one recorded both full and programmatic is full. Returns this
  /// handle.
  template <AnyCommand Parent>
  Self& after(const Parent& parent, EdgeKind kind) & {
    const detail::CommandRef ref = parent.ref();
    detail::add_edges(ref_, &ref, 1, kind);
    return self();
  }
  /// after(parent, kind) on a temporary handle; returns it as an rvalue.
  template <AnyCommand Parent>
  Self&& after(const Parent& parent, EdgeKind kind) && {
    return std::move(after(parent, kind));
  }
  /// This command runs after every command in `parents` (any range of handles). All or
  /// nothing: when one parent is refused (itself, another buffer's, stale), no edge is added.
  /// \pre As after().
  /// \post Returns this handle.
  template <std::ranges::input_range Range>
    requires AnyCommand<std::ranges::range_value_t<Range>>
  Self& after_all(const Range& parents) & {
    std::vector<detail::CommandRef> refs;
    for (const auto& p : parents) refs.push_back(p.ref());
    detail::add_edges(ref_, refs.data(), refs.size());
    return self();
  }
  /// after_all() on a temporary handle; returns it as an rvalue.
  template <std::ranges::input_range Range>
    requires AnyCommand<std::ranges::range_value_t<Range>>
  Self&& after_all(const Range& parents) && {
    return std::move(after_all(parents));
  }
  /// Names the command; the name appears in every error, trace and DOT file.
  /// \pre A valid handle of a live recording that compile() has not sealed (else Error, as
  /// for after()). Names need not be unique, but unique names make errors unambiguous.
  /// \post name() returns `name`. Returns this handle.
  Self& named(std::string_view name) & {
    detail::set_name(ref_, name);
    return self();
  }
  /// named() on a temporary handle; returns it as an rvalue.
  Self&& named(std::string_view name) && { return std::move(named(name)); }

  /// Runs the command's kernels at `priority` on the device's priority range, whatever the
  /// priority of the queue the executable is launched on: under load, ready kernels of a more
  /// urgent command get freed GPU slots first. Applies to kernels and parallel_for, and to
  /// every kernel of an executed buffer, loop or conditional body (a command inside sets its
  /// own). On a CUDA graph, an executable with any priority set runs its other kernels at
  /// normal priority; copies, fills and host tasks have none (CUDA's copies take no priority).
  /// The host backend ignores it.
  /// \pre A valid handle of an open recording (else Error, as for after()).
  /// \post Returns this handle.
  Self& priority(Priority priority) & {
    detail::set_priority(ref_, {false, static_cast<int>(priority)});
    return self();
  }
  /// priority(Priority) on a temporary handle; returns it as an rvalue.
  Self&& priority(Priority priority) && { return std::move(this->priority(priority)); }
  /// As priority(Priority), with a CUDA priority value (numerically smaller is more urgent),
  /// clamped to the device's range.
  Self& priority(int native_priority) & {
    detail::set_priority(ref_, {true, native_priority});
    return self();
  }
  /// priority(int) on a temporary handle; returns it as an rvalue.
  Self&& priority(int native_priority) && { return std::move(this->priority(native_priority)); }

  /// Says roughly how long the command runs on the device, for graph shaping: with a cost on
  /// every command that takes a lane, the cuda_graph backend's default shaping
  /// (GraphShape::automatic) adds lane edges that make CUDA's launch cheap without starting
  /// any command later than the plan's own edges would (see GraphShape); with a cost on every
  /// command that takes time, the streams backend places commands on streams by their costs
  /// and never trades a longer estimated launch (the device's run, or the host's enqueue when
  /// that is longer) for fewer event waits. A hint: it changes what no command does, and a
  /// rough figure serves (a profile's duration, or CommandBuffer::costs_from to take them all
  /// from one). Barriers and events take no time
  /// whatever their cost; only the compiled buffer's own commands count (not those of
  /// buffers it executes, nor bodies). May be given after compile() too, for the next
  /// compile() of the buffer; an executable keeps the costs it was compiled with, and
  /// update() keeps its graph's shape.
  /// \pre A valid handle (else Error, as for after()); `cost` >= 0, else
  /// Error(invalid_argument) naming the command; the buffer does not run inside another
  /// (execute(), a conditional body), else Error(wrong_state). A refusal changes nothing.
  /// \post The command's cost is `cost` (the last one given). Returns this handle.
  Self& cost(std::chrono::nanoseconds cost) & {
    detail::set_cost(ref_, cost);
    return self();
  }
  /// cost() on a temporary handle; returns it as an rvalue.
  Self&& cost(std::chrono::nanoseconds cost) && { return std::move(this->cost(cost)); }

  /// Declares that the command reads `memory`: a View, Buffer or HostBuffer, or a subview()
  /// for part of one. `label` names it in hazard errors and DOT (else its address). Kernels,
  /// parallel_for, host tasks and captures declare, and the conditional commands (loop_while,
  /// if_then, if_else, switch_on) what their condition or selector reads; copies and fills
  /// declare their source and destination themselves; executed buffers and the bodies of
  /// conditional commands carry their commands' access.
  /// CompileOptions::hazards says what compile() makes of declarations.
  /// \pre A valid handle of an open recording, a command of a kind that declares, memory
  /// that is not null or empty (else Error naming the command, and nothing is recorded).
  /// \post Returns this handle.
  template <class Memory>
  Self& reads(const Memory& memory, std::string_view label = {}) & {
    return declare(memory, detail::AccessMode::read, label);
  }
  /// reads() on a temporary handle; returns it as an rvalue.
  template <class Memory>
  Self&& reads(const Memory& memory, std::string_view label = {}) && {
    return std::move(reads(memory, label));
  }
  /// Declares that the command writes `memory`; as reads().
  template <class Memory>
  Self& writes(const Memory& memory, std::string_view label = {}) & {
    return declare(memory, detail::AccessMode::write, label);
  }
  /// writes() on a temporary handle; returns it as an rvalue.
  template <class Memory>
  Self&& writes(const Memory& memory, std::string_view label = {}) && {
    return std::move(writes(memory, label));
  }
  /// Declares that the command reads and writes `memory`; as reads().
  template <class Memory>
  Self& reads_writes(const Memory& memory, std::string_view label = {}) & {
    return declare(memory, detail::AccessMode::read_write, label);
  }
  /// reads_writes() on a temporary handle; returns it as an rvalue.
  template <class Memory>
  Self&& reads_writes(const Memory& memory, std::string_view label = {}) && {
    return std::move(reads_writes(memory, label));
  }

  /// The name given by named(), else the kind and index, e.g. "parallel_for#3".
  /// \pre A valid handle of a live recording (else Error(invalid_handle) or
  /// Error(stale_handle)).
  std::string name() const { return detail::command_name(ref_); }
  /// False for a default-constructed or moved-from handle. A valid handle can still be
  /// stale: valid() does not look at the recording.
  bool valid() const noexcept { return ref_.recording != 0; }
  /// Position in recording order within its command buffer.
  std::uint32_t index() const noexcept { return ref_.index; }
  /// The identity behind the handle: recording id and index (for the library's own use).
  detail::CommandRef ref() const noexcept { return ref_; }

  /// True when both handles name the same command, whatever their handle types.
  template <class Other>
  friend bool operator==(const BasicCommand& a, const BasicCommand<Other>& b) noexcept {
    return a.ref() == b.ref();
  }

 protected:
  /// A handle naming `ref`: the recording functions of CommandBuffer make these.
  explicit BasicCommand(detail::CommandRef ref) noexcept : ref_(ref) {}

 private:
  Self& self() noexcept { return static_cast<Self&>(*this); }
  template <class Memory>
  Self& declare(const Memory& memory, detail::AccessMode mode, std::string_view label) {
    detail::declare_access(ref_, detail::access_of(detail::memory_view(memory), mode, label));
    return self();
  }
  detail::CommandRef ref_;
};

/// A handle to any command.
class Command : public BasicCommand<Command> {
 public:
  /// An invalid handle, as BasicCommand().
  Command() = default;
  /// The handle of command `ref` (CommandBuffer's recording functions make these).
  explicit Command(detail::CommandRef ref) noexcept : BasicCommand(ref) {}
  /// Every typed handle converts to a plain Command.
  template <class Other>
    requires(!std::same_as<Other, Command>)
  Command(const BasicCommand<Other>& typed) noexcept : BasicCommand(typed.ref()) {}
};

}  // namespace cmdgraph
