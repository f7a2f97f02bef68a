// GraphShape: the edges the cuda_graph backend may add so that CUDA launches the graph cheaply.
#pragma once

namespace cmdgraph {

/// How the cuda_graph backend shapes its graph before instantiating it. cudaGraphLaunch's host
/// cost grows with how irregular a graph is: a random DAG of 1,000 empty kernels cost ~260 us a
/// launch on an H200, the same kernels with "lane" edges (each kernel after the one before it
/// on one of 8 lanes) ~13 us. Lane edges also order kernels that could have run together: a
/// short kernel may wait behind a long one it never depended on. Only commands' durations
/// tell which lanes are safe: the default, automatic(), shapes by the costs given
/// (BasicCommand::cost, CommandBuffer::costs_from), and without them learns the shape from a
/// few of its own launches, timed. Commands with a priority of their own take no lane, nor do
/// barriers and events; every recorded edge still holds in a shaped graph. Other backends
/// ignore it (the streams backend has lanes of its own). ExecutableStats::shape_reason says
/// what was chosen and why.
class GraphShape {
 public:
  /// The default. With a cost on every command that takes a lane, the run without lanes is
  /// modelled: each command takes its cost plus 0.5 us (what a graph node adds to its
  /// kernel), barriers and events none; commands start as their parents finish, and the
  /// device starts one node per 0.15 us at most (as an H200 does, a little faster). The graph
  /// gets as many lanes as the most commands that run at once in that model, so that none
  /// starts later than without lanes: a handful for short kernels, more the longer they run.
  /// Each goes to the lane of a parent it follows when that lane is free, else to the lane
  /// idle longest, after the command before it there; the plan's edges those lanes imply are
  /// dropped. Without every cost the graph first keeps exactly the plan's (reduced) edges, as
  /// off() does, and learns which lanes suit it: from launch 16 on, candidate shapings (the
  /// model above with every command lacking a cost assumed to take 20, 5, 2, 0.5 and 0 us:
  /// the most lanes first) are built on a thread of their own and each runs in place of four
  /// launches, every one timed whole beside a launch of the plan's graph. The fewest lanes
  /// within 2% of the best replay seen (the plan's graph's included) win and take over at a
  /// launch boundary (ExecutableStats::shape_learned_at_launch); trying stops at the first
  /// candidate slower than that. Executables with transient memory, update-free or indirect
  /// kernels, capture or collective commands, for device launch or profiled do not learn
  /// (shape_reason says why). No shaping either when the lanes would add no edge (chains).
  static constexpr GraphShape automatic() noexcept { return GraphShape(Mode::automatic, 0); }
  /// As automatic(), counting every command that takes a lane as one unit of time, costs or
  /// none, with no limit on how fast the device starts them: the lanes are as many as the
  /// plan's widest level. Kernels that run about as long
  /// as each other then replay no slower (on the H200: 0.69-0.96x of a hand-built graph of
  /// random DAGs, launch host cost 0.17-0.40x); with kernels of very different lengths a
  /// short one may wait behind a long one.
  static constexpr GraphShape uniform() noexcept { return GraphShape(Mode::uniform, 0); }
  /// The graph keeps exactly the plan's (reduced) edges.
  static constexpr GraphShape off() noexcept { return GraphShape(Mode::off, 0); }
  /// Commands list-scheduled onto `n` lanes, critical path first, each after the command
  /// before it on its lane; then the edges those imply are dropped. The schedule counts each
  /// command's cost (as automatic() does) when every command that takes a lane has one, else
  /// each as one unit. `n` must be at least 1 (else compile() throws Error(invalid_argument));
  /// 1 makes the graph one chain. Few lanes suit short kernels (8 lanes: random DAGs of empty
  /// kernels replay at 0.39-0.66x, with ~20 us kernels at up to 5x).
  static constexpr GraphShape lanes(unsigned n) noexcept { return GraphShape(Mode::lanes, n); }

  /// True for automatic().
  constexpr bool is_automatic() const noexcept { return mode_ == Mode::automatic; }
  /// True for uniform().
  constexpr bool is_uniform() const noexcept { return mode_ == Mode::uniform; }
  /// True for off().
  constexpr bool is_off() const noexcept { return mode_ == Mode::off; }
  /// The lanes lanes(n) asked for; 0 for the other modes.
  constexpr unsigned lane_count() const noexcept { return lanes_; }

  /// True when both ask for the same shaping (and lane count).
  friend constexpr bool operator==(GraphShape, GraphShape) noexcept = default;

 private:
  enum class Mode : unsigned char { automatic, uniform, off, lanes };
  constexpr GraphShape(Mode mode, unsigned lanes) noexcept : mode_(mode), lanes_(lanes) {}
  Mode mode_;
  unsigned lanes_;
};

}  // namespace cmdgraph
