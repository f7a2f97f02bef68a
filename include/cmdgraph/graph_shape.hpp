// GraphShape: the edges the cuda_graph backend may add so that CUDA launches the graph cheaply.
#pragma once

namespace cmdgraph {

/// How the cuda_graph backend shapes its graph before instantiating it. cudaGraphLaunch's host
/// cost grows with how irregular a graph is: a random DAG of 1,000 empty kernels cost ~260 us a
/// launch on an H200, the same kernels with "lane" edges (each kernel after the one before it
/// on one of 8 lanes) ~13 us. Lane edges also order kernels that could have run together: a
/// short kernel may wait behind a long one it never depended on. cmdgraph does not know how
/// long kernels run, so shaping is off unless asked for (CompileOptions::shape). Other
/// backends ignore it (the streams backend has lanes of its own).
class GraphShape {
 public:
  /// As many lanes as the plan's widest level has commands: counting each command as one unit
  /// of time, no command then starts later than without lanes, so a graph of kernels that run
  /// about as long as each other replays no slower (on the H200: 0.69-0.96x of a hand-built
  /// graph of random DAGs, launch host cost 0.17-0.40x). Kernels of very different lengths
  /// break that count: a short one may wait behind a long one. No shaping when it would add
  /// no edge. ExecutableStats::shape_reason says what it chose.
  static constexpr GraphShape automatic() noexcept { return GraphShape(Mode::automatic, 0); }
  /// The graph keeps exactly the plan's (reduced) edges (the default).
  static constexpr GraphShape off() noexcept { return GraphShape(Mode::off, 0); }
  /// Commands list-scheduled onto `n` lanes, critical path first, each after the command
  /// before it on its lane; then the edges those imply are dropped. `n` must be at least 1
  /// (else compile() throws Error(invalid_argument)); 1 makes the graph one chain. Few lanes
  /// suit short kernels (8 lanes: random DAGs of empty kernels replay at 0.39-0.66x, with
  /// ~20 us kernels at up to 5x). Commands with a priority of their own take no lane.
  static constexpr GraphShape lanes(unsigned n) noexcept { return GraphShape(Mode::lanes, n); }

  /// True for automatic().
  constexpr bool is_automatic() const noexcept { return mode_ == Mode::automatic; }
  /// True for off().
  constexpr bool is_off() const noexcept { return mode_ == Mode::off; }
  /// The lanes lanes(n) asked for; 0 for off() and automatic().
  constexpr unsigned lane_count() const noexcept { return lanes_; }

  /// True when both ask for the same shaping (and lane count).
  friend constexpr bool operator==(GraphShape, GraphShape) noexcept = default;

 private:
  enum class Mode : unsigned char { automatic, off, lanes };
  constexpr GraphShape(Mode mode, unsigned lanes) noexcept : mode_(mode), lanes_(lanes) {}
  Mode mode_;
  unsigned lanes_;
};

}  // namespace cmdgraph
