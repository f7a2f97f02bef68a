// GraphBuilder: a plan as a cudaGraph_t through the explicit node API, one node per command,
// edges from the plan's transitive reduction. Nested buffers and captures become child graphs,
// loops conditional WHILE nodes.
#pragma once

#include "backend/cuda_common/device_commands.hpp"
#include "backend/cuda_common/host_callbacks.hpp"
#include "cuda/handles.hpp"
#include "plan/plan.hpp"

#include <cuda_runtime_api.h>

#include <string>
#include <unordered_map>
#include <vector>

namespace cmdgraph::detail {

/// A profiled command's timed events, recorded by nodes around it.
struct ProfilePoint {
  const Plan* plan;
  std::uint32_t command;
  cudaEvent_t start;
  cudaEvent_t end;
};

struct BuiltGraph {
  cuda::Graph graph;
  std::vector<cudaGraphNode_t> nodes;                        // root command -> its node
  std::unordered_map<cudaGraphNode_t, std::string> names;    // node -> command, for errors
  HostCallbacks callbacks;                                   // userData of the host nodes
  std::size_t node_count = 0;                                // nested graphs included
  // Profiling: the graph's root event and a start and end event around every command.
  cuda::Event launch_start;
  std::vector<cuda::Event> events;
  std::vector<ProfilePoint> points;

  std::string name_of(cudaGraphNode_t node) const;
};

/// Builds graphs for one device. Captures run on `capture_stream` (created by the caller on
/// that device, needed only when the plan has captures).
class GraphBuilder {
 public:
  GraphBuilder(int device, HostErrors* errors, cudaStream_t capture_stream, bool profile = false)
      : device_(device), errors_(errors), capture_stream_(capture_stream), profile_(profile) {}
  /// The graph of `plan` with the values of `args` (the executable's own store).
  BuiltGraph build(const Plan& plan, const ArgumentStore& args);

 private:
  /// Adds a node per command of `plan`; with `profiled`, timed event nodes around each (never
  /// inside loop bodies, where CUDA allows no event nodes).
  void add_nodes(const Plan& plan, const ArgumentStore& args, cudaGraph_t graph,
                 std::vector<cudaGraphNode_t>& nodes, BuiltGraph& out, cudaGraphNode_t root,
                 bool profiled);
  cudaGraphNode_t add_event_node(cudaGraph_t graph, const std::vector<cudaGraphNode_t>& deps,
                                 BuiltGraph& out, cudaEvent_t* event);
  cudaGraphNode_t add_node(const Plan& plan, std::uint32_t c, const ArgumentStore& args,
                           cudaGraph_t graph, const std::vector<cudaGraphNode_t>& deps,
                           BuiltGraph& out, bool profiled);
  cudaGraphNode_t add_loop(const Plan& plan, std::uint32_t c, const ArgumentStore& args,
                           cudaGraph_t graph, const std::vector<cudaGraphNode_t>& deps,
                           BuiltGraph& out);
  cuda::Graph capture(const Plan& plan, std::uint32_t c);

  const Plan* root_ = nullptr;
  int device_;
  HostErrors* errors_;
  cudaStream_t capture_stream_;
  bool profile_;
};

/// Node parameters shared by building and per-node updates.
cudaKernelNodeParams kernel_node_params(KernelLaunch& launch);
cudaMemsetParams memset_node_params(const FillSpec& fill);

}  // namespace cmdgraph::detail
