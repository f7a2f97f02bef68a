// Profile: when each command of one launch started and ended, on which lane, and the ways to
// look at it (Chrome trace JSON for Perfetto / chrome://tracing).
#pragma once

#include <cmdgraph/command.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace cmdgraph {

/// One command's run within a launch; times in milliseconds from the launch's start.
struct CommandTiming {
  std::string name;  ///< "buffer/name" for commands of executed buffers
  /// What the command does.
  CommandKind kind = CommandKind::host;
  unsigned lane = 0;  ///< stream (streams backend), worker (host), or concurrency lane (graph)
  /// When it started.
  double start_ms = 0;
  /// When it ended.
  double end_ms = 0;
  /// end_ms - start_ms.
  double duration_ms() const noexcept { return end_ms - start_ms; }
};

/// The timings of one profiled launch (CompileOptions::profile).
struct Profile {
  /// The executable's name (its command buffer's).
  std::string executable;
  /// The backend that ran it, as to_string(Backend) names it.
  std::string backend;
  /// Every command of the executable's own buffer in recording order (index i is command i),
  /// then the commands of executed buffers.
  std::vector<CommandTiming> commands;
  /// Edges between commands (indices into `commands`), for flow arrows across lanes.
  std::vector<std::pair<std::size_t, std::size_t>> edges;
  /// Those of `edges` that are programmatic (EdgeKind::programmatic), drawn as such.
  std::vector<std::pair<std::size_t, std::size_t>> programmatic_edges;
  double launch_ms = 0;  ///< from the launch's start to its last command's end
  /// When the launch started, on the host's steady clock (lays several launches end to end).
  std::chrono::steady_clock::time_point started{};
  /// Which launch of the executable this is: 0 for its first (CompileOptions::profile_every
  /// profiles launches 0, N, 2N, ...).
  std::uint64_t launch = 0;
  /// How the times were taken: "cupti" (the GPU's own start and end of each kernel, copy and
  /// fill; the launch starts when launch() was called), "events" (timed events around each
  /// command; the launch starts at the first event on the GPU) or "host_clock".
  std::string timing;
  /// The host side of the launch, on the commands' axis: when launch() began enqueuing it and
  /// when it had, so launch latency and GPU idle gaps show. Where the host's and the GPU's
  /// clocks are not tied ("events") both are 0.
  ///@{
  double enqueue_start_ms = 0, enqueue_end_ms = 0;
  ///@}
  /// Commands that should have GPU times but got none (CUPTI delivered no record for them);
  /// they are placed, without duration, at their parents' end.
  std::size_t unmeasured = 0;

  /// Writes a Chrome trace (loads in Perfetto and chrome://tracing): one track per lane, a
  /// slice per command, flow arrows for dependencies between lanes; where the host side is
  /// known, a host track with launch() enqueuing and a track of the GPU's idle gaps. Throws
  /// Error on I/O.
  void write_trace(const std::string& path) const;
  /// The same for several launches, placed by their start times.
  static void write_trace(const std::string& path, std::span<const Profile> launches);
  /// The trace as a string.
  std::string trace_json() const;
  /// The trace of several launches as a string.
  static std::string trace_json(std::span<const Profile> launches);
};

}  // namespace cmdgraph
