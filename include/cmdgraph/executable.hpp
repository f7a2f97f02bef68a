// Executable: a compiled command buffer, launched and re-launched on queues.
#pragma once

#include <cmdgraph/argument_writer.hpp>
#include <cmdgraph/command.hpp>
#include <cmdgraph/compile_options.hpp>
#include <cmdgraph/config.hpp>
#include <cmdgraph/detail/conversions.hpp>
#include <cmdgraph/detail/specs.hpp>
#include <cmdgraph/detail/views.hpp>
#include <cmdgraph/device.hpp>
#include <cmdgraph/fence.hpp>
#include <cmdgraph/profile.hpp>
#include <cmdgraph/semaphore.hpp>
#include <cmdgraph/typed_commands.hpp>
#if CMDGRAPH_HAVE_NCCL
#include <cmdgraph/communicator.hpp>
#endif

#include <concepts>
#include <cstddef>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <typeinfo>

namespace cmdgraph {

class CommandBuffer;
class Queue;

/// What write_dot draws besides commands and the edges kept by the transitive reduction.
struct DotOptions {
  bool removed_edges = false;  ///< also the edges the reduction dropped, dashed
  bool timings = true;         ///< the last profile's durations, when profiled
};

/// What compile() built and how long each stage took.
struct ExecutableStats {
  /// The backend compile() used.
  Backend backend = Backend::host;
  std::string backend_reason;      ///< why this backend was chosen
  std::size_t commands = 0;        ///< commands of the top-level plan, barriers included
  std::size_t edges_recorded = 0;  ///< distinct edges after deduplication
  std::size_t edges_reduced = 0;   ///< edges kept by the transitive reduction
  std::size_t levels = 0;          ///< length of the longest chain, in commands
  std::size_t streams = 0;         ///< CUDA streams used (streams backend)
  std::size_t events = 0;          ///< CUDA events used (streams backend)
  std::size_t event_waits = 0;     ///< stream waits per launch (streams backend)
  std::size_t cross_stream_edges = 0;  ///< reduced edges between different streams
  std::size_t accesses_declared = 0;   ///< reads()/writes() declarations, bodies included
  std::size_t edges_inferred = 0;      ///< edges Hazards::infer added (before reduction)
  std::size_t pairs_validated = 0;     ///< conflicting pairs found ordered (Hazards::validate)
  /// Edges kept by the reduction between commands that touch memory (declared or implied)
  /// that order no conflicting pair: candidates to drop for more overlap (Hazards::validate;
  /// a lint, not an error). Edges to or from commands that touch no memory are not judged.
  /// Worked out when stats() is first called, for the plan the executable then runs: it
  /// walks every conflicting pair's commands, which the validation itself mostly need not.
  std::size_t edges_unneeded = 0;
  /// Edges lowered as programmatic dependent launches, bodies included: on a CUDA graph every
  /// programmatic edge (none in event-profile mode); on streams those whose kernels follow
  /// each other on one stream with no wait between (the others wait as full edges); 0 on
  /// the host backend.
  std::size_t edges_programmatic = 0;
  /// Lanes the cuda_graph backend shaped the graph on (CompileOptions::shape); 0: unshaped.
  std::size_t shape_lanes = 0;
  /// Lane edges the shaped graph holds beyond the reduced edges.
  std::size_t edges_shape_added = 0;
  /// Reduced edges the lane edges made redundant, left out of the shaped graph.
  std::size_t edges_shape_dropped = 0;
  /// What shaping did and why (e.g. "automatic: 12 lanes (the most commands the costs run at
  /// once): 40 lane edges added, 31 edges they imply left out").
  std::string shape_reason;
  /// Launches timed to learn the shape: GraphShape::automatic() on commands without a cost
  /// times candidate shapings' launches, each beside a launch of the plan's graph.
  std::size_t shape_timed_launches = 0;
  /// The launch (numbered from 0) from which the learned shaping ran; 0 while none did.
  std::uint64_t shape_learned_at_launch = 0;
  /// Commands whose kernels run at a priority of their own (priority()), bodies included;
  /// 0 on the host backend.
  std::size_t commands_prioritised = 0;
  /// Kernels whose nodes take their arguments on the device at each launch
  /// (KernelCommand::update_free): those of the compiled buffer itself on the cuda_graph
  /// backend, unless profiled or compiled for device launch; 0 elsewhere.
  std::size_t commands_update_free = 0;
  /// How launches are timed when profiled: cupti, events or host_clock (off unless
  /// CompileOptions::profile asked).
  ProfileMode profile_mode = ProfileMode::off;
  /// Why that mode: e.g. why CUPTI was not usable, so events time the commands.
  std::string profile_reason;
  /// Transient allocations (CommandBuffer::alloc).
  std::size_t transients = 0;
  /// Bytes the transients take at most at once as the plan lays them out (transients whose
  /// lifetimes the edges keep apart share bytes): the arena the streams and host backends
  /// allocate when compiling, for the executable's life. A CUDA graph takes its transients
  /// from CUDA's graph memory pool, which places them itself.
  std::size_t transient_bytes = 0;
  /// Conditional commands (loop_while, if_then, if_else, switch_on), bodies included.
  std::size_t conditionals = 0;
  /// Graphs the streams backend launches per launch, one for each conditional or indirect
  /// command outside a conditional body (0 on other backends).
  std::size_t conditional_graphs = 0;
  /// Milliseconds spent building the plan, lowering it for the backend, and instantiating
  /// it (the CUDA graph backend; 0 elsewhere).
  ///@{
  double plan_ms = 0, lower_ms = 0, instantiate_ms = 0;
  ///@}
};

/// An indirect command whose source asked for more than its limit
/// (Executable::clamped_dispatches).
struct ClampedDispatch {
  std::string command;       ///< its name
  std::uint64_t times = 0;   ///< the runs clamped
  std::uint64_t largest = 0; ///< the most any run asked for: items (parallel_for_indirect) or
                             ///< blocks, x * y * z (launch_indirect)
};

/// An executable as a kernel launches it (Executable::device_executable; the launches are in
/// cmdgraph/device_launch.cuh): a plain value, passed to kernels as an argument.
struct DeviceExecutable {
  void* graph = nullptr;  ///< the cudaGraphExec_t
  /// False for the empty handle.
  explicit operator bool() const noexcept { return graph != nullptr; }
  /// Equal when they launch the same graph.
  friend bool operator==(const DeviceExecutable&, const DeviceExecutable&) = default;
};

/// How update(CommandBuffer&) may proceed when the new recording differs in structure.
struct UpdateOptions {
  /// Re-instantiate when an in-place update is impossible, instead of throwing.
  bool reinstantiate_if_needed = false;
};

/// What update(CommandBuffer&) did.
struct UpdateResult {
  bool reinstantiated = false;  ///< true: the executable was rebuilt rather than updated in place
  std::string reason;           ///< why it was rebuilt (empty when updated in place)
  /// The commands the update changed. When only values changed: those whose values differ
  /// from the executable's, at any depth (a body counted once however many commands run it);
  /// top-level ones are set alone and the others left untouched, and so are an executed
  /// buffer's on the CUDA graph backend (unless event-profiled or for device launch); other
  /// new values in a body are taken from the whole buffer. When more changed (another host
  /// task, event or structure): every top-level command, what the backend launches rebuilt
  /// from the whole buffer.
  std::size_t commands_changed = 0;
};

namespace detail {
class ExecutableImpl;
}
class Executable;
Executable compile(CommandBuffer& commands, Device device, const CompileOptions& options);

/// A compiled, launchable form of a command buffer. Owns everything it needs: it may outlive
/// the command buffer, queues it ran on and the recording's handles. Launches of one
/// executable run one after another, never overlapping; clone() gives an independent
/// instance. One thread at a time may use an Executable. Destroying it waits for its launches
/// in flight, on every backend: once the destructor returns, none of its commands runs, so
/// what they reach may be freed.
class Executable {
 public:
  /// An empty executable: operator bool is false, and launching it (or any other use) throws
  /// Error(invalid_handle); compile() makes real ones.
  Executable() noexcept;
  /// Moves the executable; the moved-from one is empty.
  Executable(Executable&&) noexcept;
  /// Moves the executable, as the move constructor.
  Executable& operator=(Executable&&) noexcept;
  ~Executable();

  /// Enqueues one run after everything already submitted to `queue` and after this
  /// executable's previous launch; returns at once. Throws Error(invalid_handle) on an empty
  /// (default-constructed or moved-from) executable, Error(device_mismatch) for a queue of
  /// another device.
  Fence launch(Queue& queue) { return launch(queue, SubmitInfo{}); }
  /// As launch(queue), after waiting for every `info.wait` semaphore value; signals every
  /// `info.signal` value once it finished (before the returned fence signals). Signalled
  /// values of one semaphore must grow in submission order (else Error(invalid_argument)).
  Fence launch(Queue& queue, const SubmitInfo& info);

  /// The backend it was lowered for (never automatic).
  /// \pre Not empty (else Error(invalid_handle)), as for every member below.
  Backend backend() const;
  /// The device it runs on.
  Device device() const;
  /// The name of the command buffer it was compiled from.
  const std::string& name() const;
  /// What compile() built and how long each stage took.
  const ExecutableStats& stats() const;
  /// An independent instance with its own arguments, to run concurrently with this one.
  Executable clone() const;

  /// The per-command timings of the most recent profiled launch (waits for it to finish;
  /// every launch is profiled unless CompileOptions::profile_every says otherwise). Throws
  /// Error(wrong_state) unless compiled with CompileOptions{.profile = true} and launched;
  /// Error(cuda_error) when CUPTI failed to trace that launch.
  Profile last_profile() const;
  /// The indirect commands (launch_indirect, parallel_for_indirect) clamped to their limit
  /// in the launches that have finished, bodies included, each once: empty when none was.
  /// Counted from compile(), or from an update that rebuilt the executable. Read after waiting
  /// for the launches to count (a launch in flight may or may not be counted).
  std::vector<ClampedDispatch> clamped_dispatches() const;
  /// The handle kernels launch this executable through (cmdgraph/device_launch.cuh), with its
  /// graph uploaded for them in `queue`'s order: kernels of work submitted to `queue` after
  /// this call may launch it. Call it again after every update(): an update may rebuild the
  /// graph (a new handle), and what it changes reaches launches from the device only through
  /// the upload this call makes; launching a handle from before an update is undefined.
  /// Destroying the executable waits for the work of the last queue given here. A launch from
  /// the device while the graph runs fails (the device call returns CUDA's error).
  /// Throws Error(wrong_state) unless compiled with CompileOptions::device_launch,
  /// Error(device_mismatch) for a queue of another device.
  DeviceExecutable device_executable(Queue& queue);
  /// Writes the executable as Graphviz DOT: commands with names and kinds, edges after
  /// reduction, lanes as colours, the critical path in bold red, measured times when profiled.
  void write_dot(const std::string& path, const DotOptions& options = {}) const;
  /// CUDA's own picture of the graph (cudaGraphDebugDotPrint); graph backend only.
  void write_cuda_dot(const std::string& path) const;
  /// False for an empty (default-constructed or moved-from) executable.
  explicit operator bool() const noexcept { return impl_ != nullptr; }

  // Updates in place. Each changes the values the following launches use; a launch already in
  // flight keeps the values it started with. The handle must come from the command buffer
  // this executable was compiled from (or last updated with); commands of executed
  // (secondary) buffers keep their recorded values.

  /// New arguments for a kernel launch, converted and checked as launch() converted and
  /// checked them (a value its parameter cannot hold throws Error(invalid_argument)).
  template <class... P, class... A>
    requires(sizeof...(P) == sizeof...(A) && (detail::converts_to<A, P> && ...))
  void update(const KernelCommand<P...>& command, A&&... args) {
    if (auto misfit = detail::first_misfit<P...>(args...)) {
      reject_value(command.ref(), CommandKind::kernel, *misfit);
    }
    const detail::ConvertedArguments<P...> converted(std::forward<A>(args)...);
    update_values(command.ref(), CommandKind::kernel, converted.arguments());
  }
  /// A writer of `command`'s arguments for the launches that follow: ArgumentWriter::set(args...)
  /// does what update(command, args...) does, for the cost of a copy when the kernel is
  /// update-free (KernelCommand::update_free) on a CUDA graph. Ask once, set every frame.
  /// \pre As for update(command, args...): a handle of the buffer this executable was compiled
  /// from or last updated with (else Error: invalid_handle, foreign_handle, invalid_argument).
  template <class... P>
  ArgumentWriter<P...> arguments(const KernelCommand<P...>& command) {
    return ArgumentWriter<P...>(
        writable(command.ref(), CommandKind::kernel, typeid(void (*)(P...))), command.ref());
  }
  /// Opens a frame of updates held by the calling thread until the frame is destroyed
  /// (UpdateFrame): its updates then cost less, and the executable launches again once it
  /// closes. Error(concurrent_use) while another thread launches or updates it;
  /// Error(wrong_state) when this thread holds a frame of it open already.
  /// \code
  /// { UpdateFrame frame = exe.update_frame(); for (auto& w : writers) w.set(...); }
  /// exe.launch(queue);
  /// \endcode
  UpdateFrame update_frame();
  /// New grid, block and shared memory for a kernel launch.
  template <class... P>
  void update(const KernelCommand<P...>& command, const LaunchConfig& config) {
    update_values(command.ref(), CommandKind::kernel, config);
  }
  /// A new functor (and optionally a new range) for a parallel_for.
  template <class F>
  void update(const ParallelForCommand<F>& command, const F& functor) {
    update_values(command.ref(), CommandKind::parallel_for,
                  detail::ParallelForValues{detail::kernel_param(functor), nullptr, &typeid(F)});
  }
  /// A new functor and a new range [0, `n`) for a parallel_for.
  template <class F>
  void update(const ParallelForCommand<F>& command, std::size_t n, const F& functor) {
    update_values(command.ref(), CommandKind::parallel_for,
                  detail::ParallelForValues{detail::kernel_param(functor), &n, &typeid(F)});
  }
  /// New source, destination and count for a copy.
  template <class T, class Dst, class Src>
  void update(const CopyCommand<T>& command, const Dst& dst, const Src& src, std::size_t count) {
    static_assert(std::is_same_v<detail::element_of<Dst>, T>, "copy element type changed");
    update_values(command.ref(), CommandKind::copy, detail::copy_spec(dst, src, count));
  }
  /// New destination, value and count for a fill (the value checked as fill() checks it).
  template <class T, class Dst, class V>
  void update(const FillCommand<T>& command, const Dst& dst, const V& value, std::size_t count) {
    static_assert(std::is_same_v<detail::element_of<Dst>, T>, "fill element type changed");
    if (auto misfit = detail::fill_misfit<T>(value)) {
      reject_value(command.ref(), CommandKind::fill, *misfit);
    }
    update_values(command.ref(), CommandKind::fill, detail::fill_spec(dst, value, count));
  }
#if CMDGRAPH_HAVE_NCCL
  /// New source, destination and count for a collective; its communicator, operation, root
  /// and element type stay, and the values are checked as when recorded. On the CUDA graph
  /// backend the collective is captured again and its node takes the new graph
  /// (cudaGraphExecChildGraphNodeSetParams); when CUDA refuses, this throws
  /// Error(update_refused) and nothing changes. Capturing an NCCL call is collective: every
  /// rank updates its executable alike before any of them launches again.
  template <class T, class Send, class Recv>
  void update(const CollectiveCommand<T>& command, const Send& send, const Recv& recv,
              std::size_t count) {
    static_assert(std::is_same_v<detail::element_of<Recv>, T>, "collective element type changed");
    update_values(command.ref(), CommandKind::collective,
                  detail::collective_spec(detail::CollectiveOp::all_reduce, send, recv, count,
                                          ReduceOp::sum, -1));
  }
#endif
  /// A new target and value for a memory operation (write_value, wait_value); a wait keeps
  /// its comparison. Checked as when recorded.
  template <CommandKind Kind, class T, class Target>
    requires std::is_same_v<detail::element_of<Target>, T>
  void update(const ValueCommand<Kind, T>& command, const Target& target, T value) {
    update_values(command.ref(), Kind, detail::value_spec(target, value, false));
  }
  /// Takes every value of `rerecorded`, a new recording of the same structure (same commands
  /// in the same order, same kernels, same edges), in place: on the CUDA graph backend through
  /// cudaGraphExecUpdate. A different structure throws Error(update_refused) naming the first
  /// differing command (with CUDA's reason where CUDA refused) unless
  /// options.reinstantiate_if_needed. Seals `rerecorded`; later handle-based updates take its
  /// handles.
  UpdateResult update(CommandBuffer& rerecorded, const UpdateOptions& options = {});

 private:
  friend Executable compile(CommandBuffer&, Device, const CompileOptions&);
  friend class ExecutableCache;  // reads what a kept executable holds
  explicit Executable(std::unique_ptr<detail::ExecutableImpl> impl) noexcept;
  detail::ExecutableImpl& impl() const;
  // Every handle's update: `values` are of a type the command table updates commands of `kind`
  // by (their recorded types, element sizes and so on are checked there).
  template <class V>
  void update_values(detail::CommandRef command, CommandKind kind, const V& values) {
    update_command(command, kind, detail::CommandValues::of(values));
  }
  void update_command(detail::CommandRef command, CommandKind kind,
                      const detail::CommandValues& values);
  /// What an ArgumentWriter of kernel `command`, whose kernel has type `signature`, writes to.
  detail::WriterTarget writable(detail::CommandRef command, CommandKind kind,
                                const std::type_info& signature);
  /// Throws Error(invalid_argument) naming `command` (or the handle error locating it).
  [[noreturn]] void reject_value(detail::CommandRef command, CommandKind kind,
                                 const detail::Misfit& misfit);
  std::unique_ptr<detail::ExecutableImpl> impl_;
};

/// Validates `commands`, builds its plan and lowers it for `device`; seals `commands`. On
/// error nothing is kept and the buffer stays open for recording.
Executable compile(CommandBuffer& commands, Device device, const CompileOptions& options = {});

}  // namespace cmdgraph
