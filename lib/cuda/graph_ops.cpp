// CUDA graph operations through the checked door.
#include "cuda/graph_ops.hpp"

namespace cmdgraph::detail::cuda {
namespace {

const char* to_string(cudaGraphInstantiateResult r) {
  switch (r) {
    case cudaGraphInstantiateSuccess: return "success";
    case cudaGraphInstantiateError: return "error";
    case cudaGraphInstantiateInvalidStructure: return "invalid structure";
    case cudaGraphInstantiateNodeOperationNotSupported: return "node operation not supported";
    case cudaGraphInstantiateMultipleDevicesNotSupported: return "multiple devices not supported";
    default: return "unknown";
  }
}

const char* to_string(cudaGraphExecUpdateResult r) {
  switch (r) {
    case cudaGraphExecUpdateSuccess: return "success";
    case cudaGraphExecUpdateError: return "error";
    case cudaGraphExecUpdateErrorTopologyChanged: return "topology changed";
    case cudaGraphExecUpdateErrorNodeTypeChanged: return "node type changed";
    case cudaGraphExecUpdateErrorFunctionChanged: return "kernel function changed";
    case cudaGraphExecUpdateErrorParametersChanged: return "parameters changed unsupportedly";
    case cudaGraphExecUpdateErrorNotSupported: return "not supported";
    case cudaGraphExecUpdateErrorUnsupportedFunctionChange: return "unsupported function change";
    case cudaGraphExecUpdateErrorAttributesChanged: return "attributes changed";
    default: return "unknown";
  }
}

}  // namespace

cudaGraphNode_t add_node(cudaGraph_t graph, std::span<const cudaGraphNode_t> deps, NodeSpec& spec,
                         Served served, std::span<const cudaGraphEdgeData> edges) {
  cudaGraphNode_t node = nullptr;
  if (spec.memory_op) return add_memory_op_node(graph, deps, *spec.memory_op, served);
  if (spec.copy) {  // only kernels take programmatic edges: a copy's are full
    const Copy1D& c = *spec.copy;
    CMDGRAPH_CUDA(served, cudaGraphAddMemcpyNode1D, &node, graph, deps.data(), deps.size(), c.dst,
                  c.src, c.bytes, cudaMemcpyDefault);
  } else {
    CMDGRAPH_CUDA(served, cudaGraphAddNode, &node, graph, deps.data(),
                  edges.empty() ? nullptr : edges.data(), deps.size(), &spec.params);
  }
  return node;
}

cudaGraphEdgeData programmatic_edge() noexcept {
  cudaGraphEdgeData e{};
  e.from_port = cudaGraphKernelNodePortProgrammatic;
  e.type = cudaGraphDependencyTypeProgrammatic;
  return e;
}

void set_kernel_priority(cudaGraphNode_t node, int priority, Served served) {
  cudaLaunchAttributeValue value{};
  value.priority = priority;
  CMDGRAPH_CUDA(served, cudaGraphKernelNodeSetAttribute, node, cudaLaunchAttributePriority,
                &value);
}

cudaGraphDeviceNode_t make_device_updatable(cudaGraphNode_t node, Served served) {
  cudaLaunchAttributeValue value{};
  value.deviceUpdatableKernelNode.deviceUpdatable = 1;
  CMDGRAPH_CUDA(served, cudaGraphKernelNodeSetAttribute, node,
                cudaLaunchAttributeDeviceUpdatableKernelNode, &value);
  cudaLaunchAttributeValue handle{};
  CMDGRAPH_CUDA(served, cudaGraphKernelNodeGetAttribute, node,
                cudaLaunchAttributeDeviceUpdatableKernelNode, &handle);
  return handle.deviceUpdatableKernelNode.devNode;
}

ParameterPlace parameter_place(const void* function, std::size_t index, Served served) {
  ParameterPlace place{};
  CMDGRAPH_CUDA(served, cudaFuncGetParamInfo, function, index, &place.offset, &place.size);
  return place;
}

void add_edge(cudaGraph_t graph, cudaGraphNode_t from, cudaGraphNode_t to, Served served) {
  CMDGRAPH_CUDA(served, cudaGraphAddDependencies, graph, &from, &to, nullptr, 1);
}

void set_node(cudaGraphExec_t exec, cudaGraphNode_t node, NodeSpec& spec, Served served) {
  if (spec.memory_op) {
    set_memory_op_node(exec, node, *spec.memory_op, served);
  } else if (spec.copy) {
    const Copy1D& c = *spec.copy;
    CMDGRAPH_CUDA(served, cudaGraphExecMemcpyNodeSetParams1D, exec, node, c.dst, c.src, c.bytes,
                  cudaMemcpyDefault);
  } else {
    CMDGRAPH_CUDA(served, cudaGraphExecNodeSetParams, exec, node, &spec.params);
  }
}

cudaGraph_t embedded_graph(cudaGraphNode_t child, Served served) {
  cudaGraph_t graph = nullptr;
  CMDGRAPH_CUDA(served, cudaGraphChildGraphNodeGetGraph, child, &graph);
  return graph;
}

std::vector<cudaGraphNode_t> graph_nodes(cudaGraph_t graph, Served served) {
  std::size_t count = 0;
  CMDGRAPH_CUDA(served, cudaGraphGetNodes, graph, nullptr, &count);
  std::vector<cudaGraphNode_t> nodes(count);
  if (count) CMDGRAPH_CUDA(served, cudaGraphGetNodes, graph, nodes.data(), &count);
  nodes.resize(count);
  return nodes;
}

cudaGraphNodeType node_type(cudaGraphNode_t node, Served served) {
  cudaGraphNodeType type = cudaGraphNodeTypeEmpty;
  CMDGRAPH_CUDA(served, cudaGraphNodeGetType, node, &type);
  return type;
}

void set_child_graph(cudaGraphExec_t exec, cudaGraphNode_t node, cudaGraph_t child,
                     Served served) {
  CMDGRAPH_CUDA(served, cudaGraphExecChildGraphNodeSetParams, exec, node, child);
}

cudaGraphConditionalHandle create_conditional_handle(cudaGraph_t graph, Served served) {
  cudaGraphConditionalHandle handle = 0;
  CMDGRAPH_CUDA(served, cudaGraphConditionalHandleCreate, &handle, graph, 0u, 0u);
  return handle;
}

namespace graph_detail {
cudaError_t instantiate(cudaGraphExec_t* exec, cudaGraph_t graph, cudaStream_t upload_stream,
                        InstantiateFlags flags, std::string& result, cudaGraphNode_t& error_node) {
  cudaGraphInstantiateParams params{};
  if (flags.node_priority) params.flags |= cudaGraphInstantiateFlagUseNodePriority;
  if (flags.device_launch) params.flags |= cudaGraphInstantiateFlagDeviceLaunch;
  if (upload_stream) {
    params.flags |= cudaGraphInstantiateFlagUpload;
    params.uploadStream = upload_stream;
  }
  const cudaError_t status =
      try_call([&] { return cudaGraphInstantiateWithParams(exec, graph, &params); });
  result = to_string(params.result_out);
  error_node = params.errNode_out;
  return status;
}
}  // namespace graph_detail

void upload_graph(cudaGraphExec_t exec, cudaStream_t stream, Served served) {
  CMDGRAPH_CUDA(served, cudaGraphUpload, exec, stream);
}

cudaError_t update_exec(cudaGraphExec_t exec, cudaGraph_t graph, std::string& why,
                        cudaGraphNode_t& at) {
  cudaGraphExecUpdateResultInfo info{};
  const cudaError_t status = try_call([&] { return cudaGraphExecUpdate(exec, graph, &info); });
  if (status != cudaSuccess) {
    clear_error();
    why = to_string(info.result);
    at = info.errorNode;
  }
  return status;
}

void launch_graph(cudaGraphExec_t exec, cudaStream_t stream, Served served) {
  CMDGRAPH_CUDA(served, cudaGraphLaunch, exec, stream);
}

void write_graph_dot(cudaGraph_t graph, const std::string& path) {
  CMDGRAPH_CUDA(no_command, cudaGraphDebugDotPrint, graph, path.c_str(),
                static_cast<unsigned>(cudaGraphDebugDotFlagsVerbose));
}

void begin_capture(cudaStream_t stream, Served served) {
  CMDGRAPH_CUDA(served, cudaStreamBeginCapture, stream, cudaStreamCaptureModeThreadLocal);
}

cudaError_t end_capture(cudaStream_t stream, Graph& captured) noexcept {
  // The capture ends whatever fault injection says about the call, as CUDA ends it on any
  // failure: a stream left capturing would hold its graph, and whatever the graph holds (a
  // communicator NCCL captured cannot be destroyed before it), for ever.
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
  Graph made = graph ? adopt(graph) : Graph{};
  const cudaError_t status = try_call([&] { return ended; });
  if (status != cudaSuccess) {
    // A refused capture produces no graph; one made before an injected failure goes with `made`.
    clear_error();
    return status;
  }
  captured = std::move(made);
  return status;
}

void begin_capture_into(cudaStream_t stream, cudaGraph_t graph,
                        std::span<const cudaGraphNode_t> deps, Served served) {
  CMDGRAPH_CUDA(served, cudaStreamBeginCaptureToGraph, stream, graph, deps.data(), nullptr,
                deps.size(), cudaStreamCaptureModeThreadLocal);
}

cudaError_t capture_frontier(cudaStream_t stream,
                             std::vector<cudaGraphNode_t>& frontier) noexcept {
  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  const cudaGraphNode_t* deps = nullptr;
  const cudaGraphEdgeData* edges = nullptr;  // asked for, else programmatic ones are refused
  std::size_t count = 0;
  const cudaError_t status = try_call([&] {
    return cudaStreamGetCaptureInfo(stream, &capturing, nullptr, nullptr, &deps, &edges,
                                    &count);
  });
  frontier.clear();
  if (status != cudaSuccess) {
    clear_error();
    return status;
  }
  if (capturing != cudaStreamCaptureStatusActive) return cudaErrorStreamCaptureInvalidated;
  try {
    frontier.assign(deps, deps + count);
  } catch (...) {
    return cudaErrorMemoryAllocation;
  }
  return cudaSuccess;
}

cudaError_t end_capture_into(cudaStream_t stream) noexcept {
  cudaGraph_t graph = nullptr;  // the graph captured into, which its owner destroys
  // The capture ends whatever fault injection says, as in end_capture.
  const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
  const cudaError_t status = try_call([&] { return ended; });
  if (status != cudaSuccess) clear_error();
  return status;
}

}  // namespace cmdgraph::detail::cuda
