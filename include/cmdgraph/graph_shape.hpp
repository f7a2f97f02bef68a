// GraphShape: the edges the cuda_graph backend may add so that CUDA launches the graph cheaply.
#pragma once

namespace cmdgraph {

/// How the cuda_graph backend shapes its graph before instantiating it. cudaGraphLaunch's host
/// cost grows with how irregular a graph is: a random DAG of 1,000 empty kernels cost ~200 us a
/// launch on an H200, the same kernels with "lane" edges (each kernel after the one before it
/// on one of 8 lanes) ~6 us. Lane edges also order kernels that could have run together, so
/// they may lengthen a launch whose kernels do real work: shaping is chosen, never blind.
/// Other backends ignore it (the streams backend has lanes of its own).
class GraphShape {
 public:
  /// cmdgraph picks: as many lanes as the plan's widest level has commands (counting each
  /// command as one unit of time, no command then starts later than without lanes), and no
  /// shaping when that would add no edge. ExecutableStats::shape_reason says what it chose.
  static constexpr GraphShape automatic() noexcept { return GraphShape(Mode::automatic, 0); }
  /// The graph keeps exactly the plan's (reduced) edges.
  static constexpr GraphShape off() noexcept { return GraphShape(Mode::off, 0); }
  /// Commands list-scheduled onto `n` lanes, critical path first, each after the command
  /// before it on its lane; then the edges those imply are dropped. `n` must be at least 1
  /// (else compile() throws Error(invalid_argument)); 1 makes the graph one chain.
  static constexpr GraphShape lanes(unsigned n) noexcept { return GraphShape(Mode::lanes, n); }

  /// True for automatic().
  constexpr bool is_automatic() const noexcept { return mode_ == Mode::automatic; }
  /// True for off().
  constexpr bool is_off() const noexcept { return mode_ == Mode::off; }
  /// The lanes lanes(n) asked for; 0 for off() and automatic().
  constexpr unsigned lane_count() const noexcept { return lanes_; }

  friend constexpr bool operator==(GraphShape, GraphShape) noexcept = default;

 private:
  enum class Mode : unsigned char { automatic, off, lanes };
  constexpr GraphShape(Mode mode, unsigned lanes) noexcept : mode_(mode), lanes_(lanes) {}
  Mode mode_;
  unsigned lanes_;
};

}  // namespace cmdgraph
