// CommandBuffer: records commands and explicit dependency edges; compile() turns it into an
// Executable.
#pragma once

#include <cmdgraph/command.hpp>
#include <cmdgraph/conditional_calls.hpp>
#include <cmdgraph/config.hpp>
#include <cmdgraph/detail/call_site.hpp>
#include <cmdgraph/detail/conversions.hpp>
#include <cmdgraph/detail/parallel_for.hpp>
#include <cmdgraph/detail/specs.hpp>
#include <cmdgraph/detail/views.hpp>
#include <cmdgraph/event.hpp>
#include <cmdgraph/indirect_calls.hpp>
#include <cmdgraph/memory.hpp>
#include <cmdgraph/transient.hpp>
#include <cmdgraph/typed_commands.hpp>
#if CMDGRAPH_HAVE_NCCL
#include <cmdgraph/collective_calls.hpp>
#endif

#include <concepts>
#include <cstddef>
#include <functional>
#include <initializer_list>
#include <memory>
#include <ranges>
#include <source_location>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace cmdgraph {

class CommandBuffer;
struct Profile;

namespace detail {
class Recording;
/// The recording behind a buffer, for the library's own stages (compile, update).
const std::shared_ptr<Recording>& recording_of(const CommandBuffer& buffer);

}  // namespace detail

/// A recording of commands and the edges between them (Vulkan's VkCommandBuffer).
///
/// Commands are recorded in any order; edges say what must finish before what. Arguments are
/// copied when recorded. compile() seals the buffer: recording again throws until reset().
/// One thread at a time may use a CommandBuffer.
class CommandBuffer : public ConditionalCalls<CommandBuffer>,  // loop_while, if_then, ...
                      public IndirectCalls<CommandBuffer>  // launch_indirect, launch_if, ...
#if CMDGRAPH_HAVE_NCCL
    , public CollectiveCalls<CommandBuffer>  // all_reduce, broadcast, ..., exchange
#endif
{
 public:
  /// An empty recording named `name` (the name appears in errors and traces), with room for
  /// as much as the last buffer of that name destroyed on this thread held and an eighth more
  /// (a thread remembers 64 names): a frame recorded anew into a new buffer each time grows
  /// nothing while it records, as after reset(), nor when it is a little larger than the last.
  explicit CommandBuffer(std::string name = "commands");
  /// Moves the recording: handles stay valid and now belong to this buffer; the moved-from
  /// buffer holds nothing, and using it throws Error(invalid_handle).
  CommandBuffer(CommandBuffer&&) noexcept;
  /// Moves the recording, as the move constructor; the recording this buffer held before
  /// ends (its handles become stale).
  CommandBuffer& operator=(CommandBuffer&&) noexcept;
  /// Ends the recording: its handles become stale. Executables compiled from it live on.
  ~CommandBuffer();

  /// The name given to the constructor.
  const std::string& name() const;
  /// Number of commands recorded (barriers included).
  std::size_t size() const;
  /// True once compile() sealed the recording.
  bool sealed() const;
  /// Starts an empty recording; handles from before become stale.
  void reset();
  /// Gives every command of this buffer its measured duration as its cost (see
  /// BasicCommand::cost): command i gets the duration of `profile.commands[i]`, from
  /// Executable::last_profile() of an executable compiled from this buffer (or from an earlier
  /// recording of the same commands). Works on a compiled buffer, so that its next compile()
  /// shapes by the times the profile measured:
  /// \code
  /// Executable probe = compile(cmd, gpu, {.profile = true});
  /// probe.launch(queue).wait();
  /// cmd.costs_from(probe.last_profile());
  /// Executable fast = compile(cmd, gpu);  // shaped by those costs
  /// \endcode
  /// \pre The profile is of an executable of this buffer's name (else Error(invalid_argument)
  /// naming both), with as many top-level commands (else Error(invalid_argument) giving both
  /// counts), each of the same kind as this buffer's command at its place (else
  /// Error(invalid_argument) naming the command); the buffer does not run inside another
  /// (execute(), a conditional body), else Error(wrong_state). A refusal changes no cost.
  /// \post Every command's cost is its profiled duration, rounded to whole nanoseconds
  /// (commands the profile could not time get 0).
  void costs_from(const Profile& profile);

  /// Launches `kernel` with `args` converted to its parameter types. The converted arguments
  /// are copied into the recording. A wrong argument list does not compile, nor does a
  /// floating-point argument for an integer parameter; an arithmetic value its parameter
  /// cannot hold (-1 for unsigned, 1e40 for float, 300 for uint8_t) throws
  /// Error(invalid_argument) naming the command. Doubles for float parameters (2.0) are fine.
  /// An argument of a type that does not convert fails in one static_assert naming its place
  /// and both types. `config` is a LaunchConfig (or a braced `{{grid}, {block}}`): record-time
  /// errors say where the call was made.
  template <class... P, class... A>
    requires(sizeof...(P) == sizeof...(A))
  KernelCommand<P...> launch(void (*kernel)(P...), const detail::LaunchAt& config,
                             A&&... args) {
    return KernelCommand<P...>(add_launch<P...>(
        CommandKind::kernel, config,
        [&](const detail::KernelArguments& arguments) {
          return add_kernel({reinterpret_cast<const void*>(kernel), config.config, arguments},
                            config.where);
        },
        std::forward<A>(args)...));
  }

  /// Calls f(i) for every i in [0, n), in parallel, on whichever device runs the executable.
  /// \pre F is trivially copyable (it is copied byte-wise, to the device too). In a file
  /// compiled by nvcc, F's call operator must be CMDGRAPH_HOST_DEVICE (or __host__
  /// __device__): nvcc builds the kernel that calls it, and a host-only operator does not
  /// compile there. A lambda does not work there, with or without --extended-lambda: nvcc
  /// wraps a `__host__ __device__` one in a type that is not trivially copyable, and a
  /// `__device__` one cannot be called on the host; write a functor.
  /// Recorded in a file compiled without nvcc, the command has a host version only: it runs
  /// on the host backend, and compiling it for a CUDA device throws Error(unsupported)
  /// naming it.
  template <class F>
    requires std::invocable<const F&, std::size_t>
  ParallelForCommand<F> parallel_for(std::size_t n, const F& f,
                                     std::source_location where = std::source_location::current()) {
    static_assert(std::is_trivially_copyable_v<F>,
                  "parallel_for functors are copied byte-wise to the device: capture pointers "
                  "and values, not containers");
    return ParallelForCommand<F>(add_parallel_for(
        {n, detail::kernel_param(f), detail::host_invoke_of<F>(), detail::device_kernel_of<F>(),
         &typeid(F)},
        where));
  }

  /// Copies `count` elements from `src` to `dst` (any mix of host, pinned and device memory).
  template <class Dst, class Src>
  CopyCommand<detail::element_of<Dst>> copy(
      const Dst& dst, const Src& src, std::size_t count,
      std::source_location where = std::source_location::current()) {
    return CopyCommand<detail::element_of<Dst>>(
        add_values(CommandKind::copy, detail::copy_spec(dst, src, count), where));
  }

  /// Sets `count` elements of `dst` to `value`; the element must be 1, 2 or 4 bytes. A value
  /// the element type cannot hold (300 for uint8_t) throws Error(invalid_argument).
  template <class Dst, class V>
  FillCommand<detail::element_of<Dst>> fill(
      const Dst& dst, const V& value, std::size_t count,
      std::source_location where = std::source_location::current()) {
    using T = detail::element_of<Dst>;
    if (auto misfit = detail::fill_misfit<T>(value)) {
      reject_value(CommandKind::fill, *misfit, where);
    }
    return FillCommand<T>(
        add_values(CommandKind::fill, detail::fill_spec(dst, value, count), where));
  }

  /// Writes `value` into the first element of `target` (std::uint32_t or std::uint64_t;
  /// device memory, or pinned host memory a host thread may poll) once everything before the
  /// command has finished, after a fence that makes what it wrote visible first: a flag that
  /// tells another GPU or a host thread, without a host round trip, that work is done. On a
  /// CUDA graph a memory operation node (cuStreamWriteValue in a graph), on the streams
  /// backend the stream memory operation, on the host an atomic store with release ordering.
  /// Not in the body of a conditional command on CUDA devices. Writes its target (hazards).
  /// \pre `target` is not null or empty and is aligned to its element (else
  /// Error(invalid_argument) naming the command, and nothing is recorded).
  template <class Target>
    requires detail::MemoryOpValue<detail::element_of<Target>>
  ValueCommand<CommandKind::write_value, detail::element_of<Target>> write_value(
      const Target& target, detail::element_of<Target> value,
      std::source_location where = std::source_location::current()) {
    return ValueCommand<CommandKind::write_value, detail::element_of<Target>>(
        add_values(CommandKind::write_value, detail::value_spec(target, value, false), where));
  }

  /// Holds the commands after it until the first element of `target` (std::uint32_t or
  /// std::uint64_t; device memory, or pinned host memory) compares with `value` as `compare`
  /// says: a gate that a host thread or another GPU opens by writing the value, so work can be
  /// launched before its input is ready, with no host round trip when it is. On a CUDA graph a
  /// memory operation node (cuStreamWaitValue in a graph), on the streams backend the stream
  /// memory operation; on the host backend the watcher thread polls the value, and no pool
  /// thread waits. A value never reached holds the launch for ever, and destroying its
  /// executable waits for it: write the value, or wait with a timeout. Not in the body of a
  /// conditional command on CUDA devices. Reads its target (hazards). Preconditions as for
  /// write_value; an update takes a new target and value and keeps the comparison.
  template <class Target>
    requires detail::MemoryOpValue<detail::element_of<Target>>
  ValueCommand<CommandKind::wait_value, detail::element_of<Target>> wait_value(
      const Target& target, detail::element_of<Target> value, ValueCompare compare,
      std::source_location where = std::source_location::current()) {
    return ValueCommand<CommandKind::wait_value, detail::element_of<Target>>(add_values(
        CommandKind::wait_value, detail::value_spec(target, value, true, compare), where));
  }

  /// Transient memory of `count` elements of T, valid from this command to its free() (or to
  /// the end of each launch when never freed): on a CUDA graph a memory allocation node (CUDA's
  /// graph memory pool reuses the memory across launches and between allocations whose
  /// lifetimes do not overlap); on the streams and host backends a place in one arena the
  /// executable allocates when compiled, shared by transients whose lifetimes never overlap.
  /// Commands using it must run after this command and before its free (Hazards says how:
  /// compile() refuses a use before the allocation or after the free, naming both commands).
  /// Recorded in a buffer that another executes or runs as a body: refused there, with
  /// Error(unsupported).
  /// \pre count > 0 (else Error(invalid_argument) naming the command, nothing recorded).
  /// \post The returned handle names the alloc command and views the memory (see Transient).
  template <class T>
  Transient<T> alloc(std::size_t count,
                     std::source_location where = std::source_location::current()) {
    static_assert(std::is_trivially_copyable_v<T>,
                  "transient memory holds trivially copyable types");
    const detail::Allocation a = add_alloc(count, sizeof(T), alignof(T), where);
    return Transient<T>(a.command, View<T>(static_cast<T*>(a.data), count, MemorySpace::device,
                                           detail::transient_device));
  }
  /// Releases transient memory: no command may use it after this one (each launch's
  /// allocation ends here). Its bytes may then serve transients allocated after it.
  /// \pre `memory` was returned by alloc() of this buffer and is not freed yet (else Error:
  /// foreign_handle, invalid_handle, stale_handle, or invalid_argument naming both commands).
  template <class T>
  Command free(const Transient<T>& memory,
               std::source_location where = std::source_location::current()) {
    return Command(add_free(memory.ref(), where));
  }

  /// Runs `f()` on the host. On CUDA backends it runs on CUDA's callback thread and must not
  /// call CUDA, nor wait for cmdgraph work (that thread is CUDA's). On the host backend it runs
  /// on cmdgraph's thread pool and may wait for other cmdgraph work (fences, queues, events,
  /// timeline semaphores): the pool runs the work queued behind such a wait on a spare thread
  /// (see Fence). Blocking of its own (a mutex, a sleep, a std::future) is invisible to the
  /// pool and holds one of its threads, which every host executable shares: keep it short.
  /// An exception from it is rethrown from the launch's wait, naming this command.
  template <class F>
    requires std::invocable<std::decay_t<F>&>
  Command host(F&& f, std::source_location where = std::source_location::current()) {
    return Command(add_host(
        std::make_shared<detail::HostTaskOf<std::decay_t<F>>>(std::forward<F>(f)), where));
  }

  /// Marks `event` when this command runs (after its parents).
  Command record(const Event& event, std::source_location where = std::source_location::current());
  /// Orders this command's children after the most recent executed record of `event`.
  Command wait(const Event& event, std::source_location where = std::source_location::current());

  /// Runs a sealed copy of `secondary` as one command (on a CUDA graph its commands' nodes
  /// between two empty nodes; a child graph under event profiling and device launch). Seals
  /// `secondary`; it may be executed by several buffers. Nesting is bounded, here and for the
  /// bodies of conditionals alike: at most 64 levels of executed buffers and bodies, and at
  /// most 10,000,000 commands once every executed buffer is expanded; past either this throws
  /// Error(invalid_argument) naming the command, and nothing is recorded.
  Command execute(CommandBuffer& secondary,
                  std::source_location where = std::source_location::current());

  /// Calls `f(stream)` at compile time on a capturing CUDA stream, so library calls (cuBLAS,
  /// NCCL, ...) become part of the executable. CUDA devices only.
  template <class F>
    requires std::invocable<std::decay_t<F>&, NativeStream>
  Command capture(F&& f, std::source_location where = std::source_location::current()) {
    return Command(add_capture(
        std::make_shared<detail::CaptureTaskOf<std::decay_t<F>>>(std::forward<F>(f)), where));
  }

  /// Everything recorded before the barrier runs before everything recorded after it.
  Command barrier();

  /// Edge parent -> child for each parent (same as child.after(parents...)).
  template <AnyCommand Child, AnyCommand... Parents>
  void depends_on(const Child& child, const Parents&... parents) {
    const detail::CommandRef refs[] = {parents.ref()..., detail::CommandRef{}};
    detail::add_edges(child.ref(), refs, sizeof...(Parents));
  }

 private:
  friend const std::shared_ptr<detail::Recording>& detail::recording_of(const CommandBuffer&);

  // A kernel's arguments checked and converted as launch() says (a type that does not convert
  // fails to compile in one static_assert; a value that does not fit is refused, naming the
  // command of `kind`), then recorded by `add`, given the converted arguments.
  template <class... P, class Add, class... A>
  detail::CommandRef add_launch(CommandKind kind, const detail::LaunchAt& config, Add&& add,
                                A&&... args) {
    static_assert((std::is_trivially_copyable_v<P> && ...),
                  "kernel parameters must be trivially copyable");
    if constexpr (detail::KernelParameters<P...>::template take<A...>(
                      std::index_sequence_for<P...>{})) {
      if (auto misfit = detail::first_misfit<P...>(args...)) {
        reject_value(kind, *misfit, config.where);
      }
      const detail::ConvertedArguments<P...> converted(std::forward<A>(args)...);
      return add(converted.arguments());
    } else {
      return {};  // not reached: did not compile
    }
  }
  // `where`: the user's call, which errors name until the command has a name.
  detail::CommandRef add_kernel(const detail::KernelSpec& spec, std::source_location where);
  detail::CommandRef add_parallel_for(const detail::ParallelForSpec& spec,
                                      std::source_location where);
  detail::CommandRef add_indirect(const detail::IndirectRecord& record,
                                  std::source_location where);
  /// Records a command of `kind` from `values`, which its kind's recording hook checks and
  /// stores (lib/command): a kind of plain values needs no recording function of its own.
  template <class V>
  detail::CommandRef add_values(CommandKind kind, const V& values, std::source_location where) {
    return add_command(kind, detail::CommandValues::of(values), where);
  }
  detail::CommandRef add_command(CommandKind kind, const detail::CommandValues& values,
                                 std::source_location where);
  detail::CommandRef add_host(std::shared_ptr<detail::HostTask> task,
                              std::source_location where);
  detail::CommandRef add_capture(std::shared_ptr<detail::CaptureTask> task,
                                 std::source_location where);
  friend class ConditionalCalls<CommandBuffer>;
  friend class IndirectCalls<CommandBuffer>;
  detail::CommandRef add_loop(CommandBuffer& body, const detail::ConditionSpec& spec,
                              std::source_location where);
  detail::CommandRef add_if(CommandBuffer& body, const detail::ConditionSpec& spec,
                            std::source_location where);
#if CMDGRAPH_HAVE_NCCL
  friend class CollectiveCalls<CommandBuffer>;
  detail::CommandRef add_collective(const Communicator& comm, const detail::CollectiveSpec& spec,
                                    std::source_location where);
  detail::CommandRef add_exchange(const Communicator& comm,
                                  std::span<const PeerTransfer> transfers,
                                  std::source_location where);
#endif
  detail::Allocation add_alloc(std::size_t count, std::size_t element_size,
                               std::size_t alignment, std::source_location where);
  detail::CommandRef add_free(detail::CommandRef alloc, std::source_location where);
  detail::CommandRef add_if_else(std::span<CommandBuffer* const> bodies,
                                 const detail::ConditionSpec& spec, std::source_location where);
  detail::CommandRef add_switch(std::span<CommandBuffer* const> bodies,
                                const detail::ConditionSpec& spec, std::source_location where);
  /// Throws Error(invalid_argument) naming the command of `kind` about to be recorded.
  [[noreturn]] void reject_value(CommandKind kind, const detail::Misfit& misfit,
                                 std::source_location where) const;

  std::shared_ptr<detail::Recording> rec_;
};

}  // namespace cmdgraph
