// GraphBuilder: a plan as a cudaGraph_t, one node per command (each kind's node comes from
// cuda_commands), edges from the plan's transitive reduction. Bodies of executed buffers become
// child graphs, captures child graphs of what they enqueued, conditional commands conditional
// WHILE, IF and SWITCH nodes; profiling adds timed event nodes around every command. The
// streams backend builds its conditional commands here too, each a graph of its own.
#pragma once

#include "backend/cuda_commands/cuda_commands.hpp"
#include "backend/cuda_commands/host_callbacks.hpp"
#include "backend/cuda_launch/profile_points.hpp"
#include "cuda/handles.hpp"
#include "plan/plan.hpp"

#include <cmdgraph/error.hpp>

#include <cuda_runtime_api.h>

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace cmdgraph::detail {

/// The graphs capture commands enqueued, captured once before a graph is built.
struct Captures {
  std::map<std::pair<const Plan*, std::uint32_t>, cuda::Graph> graphs;
  /// Set when stream capture refused a capture command (errc::unsupported, naming it).
  std::optional<Error> refusal;
};
/// Runs every capture command of `plan` (bodies included) on a capturing stream of `device`.
/// A refusal by stream capture is returned, not thrown; what a callable throws is thrown.
Captures capture_all(const Plan& plan, int device);

struct BuiltGraph {
  cuda::Graph graph;
  std::vector<cudaGraphNode_t> nodes;  // root command -> its node
  HostCallbacks callbacks;             // userData of the host nodes
  std::size_t node_count = 0;          // bodies included
  // Profiling: the graph's first event and a start and end event around every command.
  cuda::Event launch_start;
  std::vector<cuda::Event> events;
  std::vector<ProfilePoint> points;

  /// How errors name the command behind `node` (empty when it is none of ours).
  std::string name_of(cudaGraphNode_t node) const;

  struct Origin {
    cudaGraphNode_t node;
    const Plan* plan;
    std::uint32_t command;
  };
  const Plan* root = nullptr;
  std::vector<Origin> origins;  // searched only when an error names a node
};

/// Builds graphs of one plan for one device.
class GraphBuilder {
 public:
  /// `captures` may be null (captures then run as the graph is built, on their own stream).
  GraphBuilder(int device, HostErrors* errors, bool profile, Captures* captures = nullptr)
      : device_(device), errors_(errors), profile_(profile), captures_(captures) {}
  /// The graph of `plan` with the values of `args` (the executable's own store).
  BuiltGraph build(const Plan& plan, const ArgumentStore& args);
  /// A graph of command `c` of `plan` alone (a part of executable `root`, which names it),
  /// with the values of `args`: how the streams backend runs a conditional command. Its one
  /// top-level node is nodes[0]; profiling adds no event nodes.
  BuiltGraph build_command(const Plan& root, const Plan& plan, std::uint32_t c,
                           const ArgumentStore& args);
  /// Makes node `node` of `exec` take root command `c`'s values in `args` (an updatable kind).
  static void update_node(const Plan& plan, std::uint32_t c, const ArgumentStore& args,
                          int device, cudaGraphExec_t exec, cudaGraphNode_t node);

 private:
  class Site;
  /// Adds a node per command of `plan` to `graph`; with `profiled`, timed event nodes around
  /// each (never inside conditional bodies, where CUDA allows no event nodes). `entry`: the nearest
  /// host-task ancestors of the plan's sources; returns those of what follows its sinks.
  HostAncestors add_nodes(const Plan& plan, const ArgumentStore& args, cudaGraph_t graph,
                          std::vector<cudaGraphNode_t>& nodes, cudaGraphNode_t root,
                          bool profiled, HostAncestors entry);
  cudaGraphNode_t add_event_node(cudaGraph_t graph, std::span<const cudaGraphNode_t> deps,
                                 cudaEvent_t* event);
  cudaGraphNode_t add_child(cudaGraph_t graph, std::span<const cudaGraphNode_t> deps,
                            cudaGraph_t child, cuda::Served served);
  cudaGraphNode_t add_conditional(const Plan& plan, std::uint32_t c,
                                  cudaGraphConditionalNodeType type, const Condition& condition,
                                  const ArgumentStore& args, cudaGraph_t graph,
                                  std::span<const cudaGraphNode_t> deps);
  cuda::Graph capture(const Plan& plan, std::uint32_t c);

  int device_;
  HostErrors* errors_;
  bool profile_;
  Captures* captures_;
  BuiltGraph* out_ = nullptr;  // the graph being built
  const Plan* root_ = nullptr;
  cuda::Stream capture_stream_;  // made when a capture runs during the build
};

}  // namespace cmdgraph::detail
