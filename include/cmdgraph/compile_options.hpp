// CompileOptions: how compile() builds an executable: its backend, what it makes of declared
// access, how launches are profiled, shaping, programmatic edges, device launch.
#pragma once

#include <cmdgraph/graph_shape.hpp>

#include <concepts>

namespace cmdgraph {

/// How a plan is lowered.
enum class Backend : unsigned char {
  automatic,   ///< a CUDA graph on CUDA devices (streams when a command cannot be a graph node),
               ///< the host backend on the host device
  cuda_graph,  ///< one cudaGraphExec_t, one cudaGraphLaunch per launch
  streams,     ///< several CUDA streams ordered by events
  host,        ///< the CPU thread pool
};
/// The backend's name as the enumerator spells it, e.g. "cuda_graph"; never null.
const char* to_string(Backend backend) noexcept;

/// What compile() makes of the memory commands declare they read and write (reads(),
/// writes(), reads_writes(); copies and fills declare theirs themselves). Two accesses
/// conflict when their byte ranges overlap and one of them writes.
enum class Hazards : unsigned char {
  /// validate when any command touches memory the plan can see: declared access, a copy's,
  /// fill's or collective's own ranges, or transient memory (CommandBuffer::alloc); off
  /// when none does (kernels and host tasks that declare nothing).
  automatic,
  /// Adds an edge for every conflicting pair, in recording order (read-after-write,
  /// write-after-read, write-after-write), then reduces; explicit edges still apply.
  infer,
  /// Every conflicting pair must be ordered by a path of explicit edges, else compile()
  /// throws Error(hazard) saying how many pairs are unordered and listing the first 50 with
  /// both commands, what each touches and the kind of hazard (then how many it left out).
  validate,
  /// Declarations are kept but not checked, except accesses to transient memory: those are
  /// always validated (transients whose lifetimes the edges keep apart share bytes).
  off,
};

/// How an executable's commands are timed (CompileOptions::profile, ExecutableStats).
enum class ProfileMode : unsigned char {
  off,        ///< not profiled: no cost at all
  automatic,  ///< on, as `profile = true` asks: on the cuda_graph backend CUPTI where usable
              ///< once an executable of the process asked for cupti (starting CUPTI costs
              ///< every graph launch of the process host time for good), else timed events
              ///< (ExecutableStats::profile_reason says why); timed events on the streams
              ///< backend; the host clock on the host backend
  events,     ///< timed CUDA events around every command (a CUDA graph gains two event nodes
              ///< per command, which serialise what they bracket)
  cupti,      ///< the GPU's own start and end of kernels, copies and fills from CUPTI's
              ///< activity records (cuda_graph backend); compile() throws Error(unsupported)
              ///< where CUPTI is not usable (not built in, another subscriber holds it)
  host_clock, ///< the host's steady clock: what every mode but off gives on the host backend
              ///< (reported by ExecutableStats; requesting it for a CUDA device is refused)
};
/// The mode's name as the enumerator spells it, e.g. "cupti"; never null.
const char* to_string(ProfileMode mode) noexcept;

/// CompileOptions::profile: a ProfileMode, or `true` (ProfileMode::automatic) and `false`
/// (ProfileMode::off).
struct Profiling {
  /// The mode asked for.
  ProfileMode mode = ProfileMode::off;
  /// Off.
  constexpr Profiling() noexcept = default;
  /// `m`.
  constexpr Profiling(ProfileMode m) noexcept : mode(m) {}  // NOLINT: a mode is a request
  /// `true`: automatic, `false`: off (only a bool converts, not a number or a pointer).
  template <class B>
    requires std::same_as<B, bool>
  constexpr Profiling(B on) noexcept  // NOLINT: `profile = true` reads as it means
      : mode(on ? ProfileMode::automatic : ProfileMode::off) {}
  /// True unless off.
  constexpr explicit operator bool() const noexcept { return mode != ProfileMode::off; }
  /// Equal when the modes are.
  friend constexpr bool operator==(const Profiling&, const Profiling&) = default;
};

/// How compile() builds an executable.
struct CompileOptions {
  /// Which backend lowers the plan.
  Backend backend = Backend::automatic;
  /// Most streams the streams backend uses.
  unsigned max_streams = 4;
  /// Record when each command starts and ends (Executable::last_profile): `true` picks CUPTI's
  /// activity records where usable, else timed events around commands on CUDA; the steady
  /// clock on the host. ExecutableStats::profile_mode says which, profile_reason why. Off
  /// (`false`): no cost at all.
  Profiling profile = false;
  /// Profile one launch in this many: launches 0, N, 2N, ... of the executable are timed, the
  /// others run as if unprofiled (on the cuda_graph backend in event mode, through a second
  /// instantiation without event nodes). Must be at least 1 (else Error(invalid_argument)).
  unsigned profile_every = 1;
  /// What the declared access does (see Hazards).
  Hazards hazards = Hazards::automatic;
  /// Lower programmatic edges (EdgeKind::programmatic, and edges into kernels declared
  /// programmatic_safe()) as programmatic dependent launches; false makes them full edges.
  bool programmatic_edges = true;
  /// The edges the cuda_graph backend adds to make CUDA's launch cheap (see GraphShape): by
  /// default only when every command that takes a lane has a cost, else none.
  GraphShape shape = GraphShape::automatic();
  /// One set of rules on every backend: the host backend refuses the structures CUDA devices
  /// refuse whatever the device (host tasks and events in the body of a conditional command;
  /// a conditional command inside an executed buffer), with the error compile() would throw for
  /// a GPU, naming the same command, so a program tested on a CPU machine compiles on a GPU
  /// one. False lets a host-only program use what only the host backend runs. The CUDA
  /// backends always refuse them. (A memory operation's target in pageable memory is refused
  /// by the CUDA backends alone: without a GPU, a HostBuffer is pageable memory too.)
  bool portable = true;
  /// Instantiates the CUDA graph for launch from the device as well as from the host
  /// (cudaGraphInstantiateFlagDeviceLaunch): kernels launch it through the handle
  /// Executable::device_executable() gives, with cmdgraph/device_launch.cuh. Needs a CUDA
  /// device and the cuda_graph backend, and no profiling; the graph holds only what CUDA's
  /// device graphs hold (kernel, memcpy, memset and child graph nodes): kernels,
  /// parallel_for, indirect commands, copies, fills and executed buffers of these. compile()
  /// throws Error(unsupported) naming the first other command (host tasks, events, barriers,
  /// conditional commands, captures, collectives, transient memory, value writes and waits),
  /// and the command CUDA names when it refuses the graph.
  bool device_launch = false;

  /// Equal when every field is (ExecutableCache keys by them).
  friend bool operator==(const CompileOptions&, const CompileOptions&) = default;
};

}  // namespace cmdgraph
