// Typed, checked operations on CUDA graphs: adding and updating nodes, conditional handles,
// instantiation with upload, whole-graph updates, launches. The only code that calls CUDA's
// graph API; every call goes through the checked door (check.hpp).
#pragma once

#include "cuda/check.hpp"
#include "cuda/driver.hpp"
#include "cuda/handles.hpp"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace cmdgraph::detail::cuda {

/// A 1-D copy between any two pointers CUDA can reach (cudaMemcpyDefault).
struct Copy1D {
  void* dst;
  const void* src;
  std::size_t bytes;
};

/// What one node does: CUDA's generic node parameters, a 1-D copy (which CUDA describes with
/// its own calls so that copies stay updatable in place), or a memory operation (a node the
/// runtime's parameters do not describe).
struct NodeSpec {
  cudaGraphNodeParams params{};
  std::optional<Copy1D> copy;
  std::optional<MemoryOp> memory_op;

  static NodeSpec of(cudaGraphNodeType type) {
    NodeSpec s;
    s.params.type = type;
    return s;
  }
};

/// Adds a node doing `spec` after `deps`; conditional nodes return their body graphs in
/// `spec.params.conditional.phGraph_out`. `edges`, when not empty, describes each edge from
/// `deps` (programmatic edges between kernel nodes); empty means full edges.
cudaGraphNode_t add_node(cudaGraph_t graph, std::span<const cudaGraphNode_t> deps, NodeSpec& spec,
                         Served served, std::span<const cudaGraphEdgeData> edges = {});
/// The edge data of a programmatic dependency: the child may launch once every block of the
/// parent kernel has triggered (cudaTriggerProgrammaticLaunchCompletion) or exited.
cudaGraphEdgeData programmatic_edge() noexcept;
/// Runs kernel node `node` at CUDA priority `priority` (taken when the graph is instantiated
/// with node priorities).
void set_kernel_priority(cudaGraphNode_t node, int priority, Served served);
/// Makes kernel node `node` updatable from the device, returning the handle kernels update it
/// by (its grid, parameters, enabled). Its graph can then not be updated as a whole
/// (cudaGraphExecUpdate), cloned or instantiated twice, nor copied into a child graph node.
cudaGraphDeviceNode_t make_device_updatable(cudaGraphNode_t node, Served served);
/// Where parameter `index` of kernel `function` lies among its parameters, for kernels that set
/// it on the device (cudaGraphKernelNodeSetParam).
struct ParameterPlace {
  std::size_t offset;
  std::size_t size;
};
ParameterPlace parameter_place(const void* function, std::size_t index, Served served);
/// The edge `from` -> `to` in `graph` (a full one).
void add_edge(cudaGraph_t graph, cudaGraphNode_t from, cudaGraphNode_t to, Served served);
/// Makes `node` of `exec` do `spec` from the next launch on (kernel, copy and fill nodes).
void set_node(cudaGraphExec_t exec, cudaGraphNode_t node, NodeSpec& spec, Served served);
/// The graph a child graph node runs, owned by the node: nodes added to it run in the node.
cudaGraph_t embedded_graph(cudaGraphNode_t child, Served served);
/// The nodes of `graph` (not those of graphs nested in them).
std::vector<cudaGraphNode_t> graph_nodes(cudaGraph_t graph, Served served);
/// What `node` is.
cudaGraphNodeType node_type(cudaGraphNode_t node, Served served);
/// Makes child graph node `node` of `exec` run `child` (same topology as its graph) from the
/// next launch on.
void set_child_graph(cudaGraphExec_t exec, cudaGraphNode_t node, cudaGraph_t child,
                     Served served);
/// A handle for the conditional nodes of `graph`, starting at 0 before every launch.
cudaGraphConditionalHandle create_conditional_handle(cudaGraph_t graph, Served served);

/// How a graph is instantiated.
struct InstantiateFlags {
  bool node_priority = false;  ///< kernels run at their nodes' priorities, not their stream's
  bool device_launch = false;  ///< kernels may launch it too (cudaGraphInstantiateFlagDeviceLaunch)
};

/// Instantiates `graph` as `flags` say and starts uploading it on `upload_stream` (when null,
/// its first launch uploads it). On failure throws, naming `name_of(error node)` as the
/// command when CUDA says which node failed.
template <class NameOf>
GraphExec instantiate(cudaGraph_t graph, cudaStream_t upload_stream, InstantiateFlags flags,
                      Served served, NameOf&& name_of);
/// Uploads `exec` again on `stream`: what host-side updates changed reaches launches from the
/// device only through an upload.
void upload_graph(cudaGraphExec_t exec, cudaStream_t stream, Served served);

/// Takes `graph`'s parameters into `exec`, which was instantiated from a graph of the same
/// topology. Returns cudaSuccess, or CUDA's refusal with `why` (its reason) and `at` (the
/// node CUDA names, or null); the sticky error is cleared.
cudaError_t update_exec(cudaGraphExec_t exec, cudaGraph_t graph, std::string& why,
                        cudaGraphNode_t& at);

/// One launch of `exec` on `stream`.
void launch_graph(cudaGraphExec_t exec, cudaStream_t stream, Served served);
/// CUDA's own DOT picture of `graph`.
void write_graph_dot(cudaGraph_t graph, const std::string& path);

/// Starts capturing `stream` (thread-local mode: calls unsafe during capture from this thread
/// are refused, other threads are not disturbed).
void begin_capture(cudaStream_t stream, Served served);
/// Ends the capture on `stream`, whatever happened inside: the captured graph in `captured`
/// on success; else CUDA's refusal (the sticky error cleared, nothing to free). Never throws.
cudaError_t end_capture(cudaStream_t stream, Graph& captured) noexcept;
/// Starts capturing `stream` into `graph` itself, the first work captured after `deps`
/// (thread-local mode, as begin_capture): what is captured becomes nodes of `graph`.
void begin_capture_into(cudaStream_t stream, cudaGraph_t graph,
                        std::span<const cudaGraphNode_t> deps, Served served);
/// The nodes work captured next on `stream` would follow: once the capture's work has joined
/// `stream`, its last nodes (the edges into what follows are full ones). Empty with a refusal
/// when the capture was invalidated.
cudaError_t capture_frontier(cudaStream_t stream,
                             std::vector<cudaGraphNode_t>& frontier) noexcept;
/// Ends a capture begun by begin_capture_into (the graph stays its owner's); CUDA's refusal,
/// the sticky error cleared, or cudaSuccess. Never throws.
cudaError_t end_capture_into(cudaStream_t stream) noexcept;

namespace graph_detail {
cudaError_t instantiate(cudaGraphExec_t* exec, cudaGraph_t graph, cudaStream_t upload_stream,
                        InstantiateFlags flags, std::string& result, cudaGraphNode_t& error_node);
}

template <class NameOf>
GraphExec instantiate(cudaGraph_t graph, cudaStream_t upload_stream, InstantiateFlags flags,
                      Served served, NameOf&& name_of) {
  cudaGraphExec_t exec = nullptr;
  std::string result;
  cudaGraphNode_t error_node = nullptr;
  const cudaError_t status =
      graph_detail::instantiate(&exec, graph, upload_stream, flags, result, error_node);
  if (status != cudaSuccess) {
    const std::string call = "cudaGraphInstantiateWithParams (" + result + ")";
    const std::string failed = error_node ? name_of(error_node) : std::string();
    if (!failed.empty()) fail(status, call.c_str(), Served(failed));
    fail(status, call.c_str(), served);
  }
  return adopt(exec);
}

}  // namespace cmdgraph::detail::cuda
