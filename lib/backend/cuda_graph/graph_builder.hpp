// GraphBuilder: a plan as a cudaGraph_t, one node per command (each kind's node comes from
// cuda_commands), edges from the plan's transitive reduction. Bodies of executed buffers are
// built in place (child graphs under event profiling), captures and collectives become child
// graphs of what they enqueued, conditional
// commands conditional WHILE, IF and SWITCH nodes; event profiling adds timed event nodes
// around every command, CUPTI profiling notes which nodes' activity records time which
// command and keeps those nodes top-level (graph_builder_cupti.cpp). The streams backend
// builds its conditional commands here too, each a graph of its own.
#pragma once

#include "backend/cuda_commands/cuda_commands.hpp"
#include "backend/cuda_commands/host_callbacks.hpp"
#include "backend/cuda_graph/device_arguments.hpp"
#include "backend/cuda_graph/dispatch_states.hpp"
#include "backend/cuda_launch/cupti_timing.hpp"
#include "backend/cuda_launch/profile_points.hpp"
#include "backend/dispatch_reports.hpp"
#include "backend/executable_values.hpp"
#include "backend/transient_binding.hpp"
#include "cuda/handles.hpp"
#include "plan/plan.hpp"
#include "plan/shaping.hpp"

#include <cmdgraph/error.hpp>
#include <cmdgraph/executable.hpp>

#include <cuda_runtime_api.h>

#include <map>
#include <memory>
#include <optional>
#include <span>
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
/// Why stream capture refused capture command `name` (`status`): Error(unsupported) naming it.
Error capture_refused(const std::string& name, cudaError_t status);
/// Runs every capture command of `plan` (bodies included) on a capturing stream of `device`.
/// A refusal by stream capture is returned, not thrown; what a callable throws is thrown.
Captures capture_all(const Plan& plan, int device);
/// What stream capture makes of collective `p` with the values in `args`, enqueued on `stream`.
/// NCCL supports capture; a failure is an error like any other (the backend has no fallback).
cuda::Graph capture_collective(const CollectivePayload& p, const ArgumentStore& args,
                               cudaStream_t stream, cuda::Served served);

struct BuiltGraph {
  // The communicators of the collectives captured into it, first so that they outlive every
  // graph below: NCCL's destruction of a communicator waits for the graphs that captured it.
  std::vector<std::shared_ptr<CommunicatorState>> communicators;
  cuda::Graph graph;
  std::vector<cudaGraphNode_t> nodes;  // root command -> its node
  HostCallbacks callbacks;             // userData of the host nodes
  std::size_t node_count = 0;          // bodies included
  std::size_t programmatic_edges = 0;  // edges made programmatic, bodies included
  // The top level's lane edges (the plan's, or for an update in place the instantiated
  // graph's); null when the plan was not shaped.
  std::shared_ptr<const GraphShaping> shaping;
  bool node_priority = false;          // a kernel node has a priority: instantiate with them
  // Profiling: the graph's first event and a start and end event around every command.
  cuda::Event launch_start;
  std::vector<cuda::Event> events;
  std::vector<ProfilePoint> points;
  // CUPTI profiling: each command's run, and the nodes whose records time them; the memory
  // the marker fills write (GraphBuilder::marker), while any instantiation may run them.
  std::shared_ptr<CuptiTiming> cupti;
  std::shared_ptr<void> marker_memory;
  // What stream capture made of each collective, kept as long as the instantiation may run
  // it: NCCL ties the resources of a captured operation to the captured graph.
  std::map<std::pair<const Plan*, std::uint32_t>, cuda::Graph> collectives;
  // What the dispatchers of its indirect commands report to (null without any), kept as long
  // as the instantiation may run them.
  std::shared_ptr<DispatchReports> reports;
  // What each dispatcher last set on its node, kept as long as the instantiation may run them.
  DispatchStates dispatch_states;
  // The applier of the update-free kernels' arguments, and what it reads beside its block
  // (null and empty without any).
  cudaGraphNode_t applier = nullptr;
  ApplierTable applier_table;
  /// Adds `comm` to `communicators` unless it is there.
  void keep(const std::shared_ptr<CommunicatorState>& comm);

  /// How errors name the command behind `node` (empty when it is none of ours).
  std::string name_of(cudaGraphNode_t node) const;

  struct Origin {
    cudaGraphNode_t node;
    const Plan* plan;
    std::uint32_t command;
  };
  const Plan* root = nullptr;
  std::vector<Origin> origins;  // searched only when an error names a node
  /// The executed buffers built in place, outside conditionals' bodies: by the executes
  /// leading to one (a root command, then one of its body, ...), the node of each of its
  /// commands, which an update sets alone.
  std::map<std::vector<std::uint32_t>, std::vector<cudaGraphNode_t>> inlined;
};

/// How a GraphBuilder builds.
struct BuildOptions {
  int device = 0;
  HostErrors* errors = nullptr;  // what host nodes report to (null: a graph without them)
  /// off, events (event nodes) or cupti (BuiltGraph::cupti).
  ProfileMode timing = ProfileMode::off;
  /// What capture_all captured; null: captures run as the graph is built, on their own stream.
  Captures* captures = nullptr;
  /// The plan's programmatic edges become programmatic graph edges (unless event nodes sit
  /// between the kernels): CompileOptions::programmatic_edges.
  bool programmatic = true;
  /// Where indirect commands report their clamps (pinned_reports of the root plan); needed
  /// when the plan has any.
  std::shared_ptr<DispatchReports> reports;
  /// The root plan's update-free kernels, whose nodes an applier node before them sets on the
  /// device (null: none, or built as any kernel).
  const DeviceArguments* arguments = nullptr;
  /// For launch from the device (CompileOptions::device_launch), whose graphs hold no empty
  /// node: executed buffers stay child graph nodes.
  bool device_launch = false;
};

/// Builds graphs of one plan for one device.
class GraphBuilder {
 public:
  explicit GraphBuilder(const BuildOptions& options)
      : device_(options.device), errors_(options.errors),
        profile_(options.timing == ProfileMode::events),
        cupti_(options.timing == ProfileMode::cupti), captures_(options.captures),
        programmatic_(options.programmatic), reports_(options.reports),
        arguments_(options.arguments), device_launch_(options.device_launch) {}
  /// The graph of `plan` with the values of `args` (the executable's own store). Its
  /// transients are memory allocation nodes: as each is made, `transients` binds the transient
  /// where CUDA put it, rewriting the words of `args` that point there, unless `bound` (the
  /// binding already holds an instantiated graph's addresses, for an update in place). Those
  /// never freed are freed after every command. `shaped`: lane edges to keep (an update in
  /// place keeps the instantiated graph's, which costs given since must not change), else
  /// the plan's.
  BuiltGraph build(const Plan& plan, ExecutableValues& args, TransientBinding& transients,
                   bool bound = false, std::shared_ptr<const GraphShaping> shaped = nullptr);
  /// A graph of command `c` of `plan` alone (a part of executable `root`, which names it),
  /// with the values of `args`: how the streams backend runs a conditional command. Its one
  /// top-level node is nodes[0]; profiling adds no event nodes.
  BuiltGraph build_command(const Plan& root, const Plan& plan, std::uint32_t c,
                           const ArgumentStore& args);
  /// Makes node `node` of `exec` take root command `c`'s values in `args` (an updatable kind).
  /// For a collective, returns the graph captured anew, which must live as long as `exec` may
  /// run it; null for other kinds.
  static cuda::Graph update_node(const Plan& plan, std::uint32_t c, const ArgumentStore& args,
                                 int device, cudaGraphExec_t exec, cudaGraphNode_t node);

 private:
  class Site;
  /// Adds a node per command of `plan` to `graph`; with `profiled`, timed event nodes around
  /// each (never inside conditional bodies, where CUDA allows no event nodes). `entry`: the nearest
  /// host-task ancestors of the plan's sources; returns those of what follows its sinks.
  /// `priority`: that of the command whose body `plan` is, for kernels without their own.
  HostAncestors add_nodes(const Plan& plan, const ArgumentStore& args, cudaGraph_t graph,
                          std::vector<cudaGraphNode_t>& nodes, cudaGraphNode_t root,
                          bool profiled, HostAncestors entry, std::optional<int> priority = {});
  void add_edge_data(const Plan& plan, std::uint32_t c, std::span<const std::uint32_t> parents,
                     std::vector<cudaGraphEdgeData>& edges);
  cudaGraphNode_t add_event_node(cudaGraph_t graph, std::span<const cudaGraphNode_t> deps,
                                 cudaEvent_t* event);
  cudaGraphNode_t add_child(cudaGraph_t graph, std::span<const cudaGraphNode_t> deps,
                            cudaGraph_t child, cuda::Served served);
  cudaGraphNode_t add_conditional(const Plan& plan, std::uint32_t c,
                                  cudaGraphConditionalNodeType type, const Condition& condition,
                                  const ArgumentStore& args, cudaGraph_t graph,
                                  std::span<const cudaGraphNode_t> deps, std::uint32_t timed,
                                  std::optional<int> priority);
  cudaGraphNode_t add_indirect(const Plan& plan, std::uint32_t c, cuda::NodeSpec& work,
                               const IndirectDispatch& dispatch, cudaGraph_t graph,
                               std::span<const cudaGraphNode_t> deps, std::uint32_t timed,
                               std::optional<int> priority);
  void add_applier(const Plan& plan);
  cuda::Graph capture(const Plan& plan, std::uint32_t c);
  // CUPTI profiling: the run of command c of `plan` that nodes added now are noted for (a new
  // one, or the conditional body's owner they fold into), and noting them.
  std::uint32_t timed_run(const Plan& plan, std::uint32_t c,
                          std::vector<std::uint32_t>& run_of);
  void note(cudaGraphNode_t node, std::uint32_t timed, unsigned work);
  void note_nested(cudaGraph_t graph, std::uint32_t timed, cuda::Served served);
  cudaGraphNode_t marker(cudaGraph_t graph, std::span<const cudaGraphNode_t> deps,
                         std::uint32_t timed, const Plan& plan, std::uint32_t c);
  cudaGraphNode_t inline_body(const Plan& body, std::uint32_t execute, cudaGraph_t graph,
                              std::span<const cudaGraphNode_t> deps, std::uint32_t timed,
                              std::optional<int> priority, const HostAncestors& before,
                              HostAncestors& after);
  cudaGraphNode_t capture_inline(const Plan& plan, std::uint32_t c, cudaGraph_t graph,
                                 std::span<const cudaGraphNode_t> deps, std::uint32_t timed);
  cuda::Stream& capture_stream();
  void allocated(std::uint32_t c, void* address);
  void* to_free(std::uint32_t c) const;
  void free_the_rest(const Plan& plan);

  int device_;
  HostErrors* errors_;
  bool profile_;  // timed events
  bool cupti_;    // CUPTI records
  Captures* captures_;
  bool programmatic_;
  std::shared_ptr<DispatchReports> reports_;
  const DeviceArguments* arguments_;
  bool device_launch_;
  std::uint32_t owner_ = no_timed;      // the executed buffer being built (CUPTI)
  std::uint32_t fold_into_ = no_timed;  // the conditional whose body is being built (CUPTI)
  BuiltGraph* out_ = nullptr;  // the graph being built
  // The executes leading to the body being built (BuiltGraph::inlined); none within a
  // conditional's body.
  std::optional<std::vector<std::uint32_t>> path_ = std::vector<std::uint32_t>{};
  const Plan* root_ = nullptr;
  cuda::Stream capture_stream_;  // made when a capture runs during the build
  // Transients of the graph being built: where the arguments point, where its nodes put them.
  ExecutableValues* args_ = nullptr;
  TransientBinding* transients_ = nullptr;
  bool bound_ = false;
  std::vector<void*> allocations_;  // per transient, as this graph's allocation nodes returned
};

}  // namespace cmdgraph::detail
