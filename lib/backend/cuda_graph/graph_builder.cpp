// GraphBuilder: node per command kind, child graphs for nesting and capture, conditional WHILE
// nodes for loops.
#include "backend/cuda_graph/graph_builder.hpp"

#include "cuda/check.hpp"
#include "error/task_failure.hpp"
#include "sync/event_state.hpp"

#include <cmdgraph/error.hpp>
#include <exception>

namespace cmdgraph::detail {

std::string BuiltGraph::name_of(cudaGraphNode_t node) const {
  const auto it = names.find(node);
  return it == names.end() ? std::string() : it->second;
}

cudaKernelNodeParams kernel_node_params(KernelLaunch& launch) {
  cudaKernelNodeParams p{};
  p.func = const_cast<void*>(launch.function);
  p.gridDim = launch.grid;
  p.blockDim = launch.block;
  p.sharedMemBytes = launch.shared_bytes;
  p.kernelParams = launch.params.data();
  p.extra = nullptr;
  return p;
}

cudaMemsetParams memset_node_params(const FillSpec& fill) {
  cudaMemsetParams p{};
  p.dst = fill.dst.data;
  p.value = fill.value;
  p.elementSize = fill.element_size;
  p.width = fill.dst.bytes / fill.element_size;
  p.height = 1;
  p.pitch = 0;
  return p;
}

BuiltGraph GraphBuilder::build(const Plan& plan, const ArgumentStore& args) {
  BuiltGraph out;
  root_ = &plan;
  out.graph = cuda::create_graph(cuda::for_executable(plan.recording->name()));
  cudaGraphNode_t root = nullptr;
  if (profile_) {
    out.launch_start = cuda::create_event(device_, true, cuda::for_executable(plan.recording->name()));
    CMDGRAPH_CUDA(cuda::for_executable(plan.recording->name()), cudaGraphAddEventRecordNode, &root, out.graph.get(),
                  nullptr, std::size_t{0}, out.launch_start.get());
  }
  add_nodes(plan, args, out.graph.get(), out.nodes, out, root, profile_);
  return out;
}

cudaGraphNode_t GraphBuilder::add_event_node(cudaGraph_t graph,
                                             const std::vector<cudaGraphNode_t>& deps,
                                             BuiltGraph& out, cudaEvent_t* event) {
  out.events.push_back(cuda::create_event(device_, true));
  *event = out.events.back().get();
  cudaGraphNode_t node = nullptr;
  CMDGRAPH_CUDA(cuda::no_command, cudaGraphAddEventRecordNode, &node, graph, deps.data(),
                deps.size(), *event);
  return node;
}

void GraphBuilder::add_nodes(const Plan& plan, const ArgumentStore& args, cudaGraph_t graph,
                             std::vector<cudaGraphNode_t>& nodes, BuiltGraph& out,
                             cudaGraphNode_t root, bool profiled) {
  nodes.assign(plan.size(), nullptr);
  // Profiling: start -> command -> end, and dependants follow the end event, so every
  // command's start is recorded after its parents' ends (the timings honour the edges).
  std::vector<cudaGraphNode_t> ends(profiled ? plan.size() : 0, nullptr);
  std::vector<cudaGraphNode_t> deps;
  for (std::uint32_t c : plan.order) {
    deps.clear();
    for (std::uint32_t p : plan.parents[c]) deps.push_back(profiled ? ends[p] : nodes[p]);
    if (deps.empty() && root) deps.push_back(root);
    ProfilePoint point{&plan, c, nullptr, nullptr};
    if (profiled) deps.assign(1, add_event_node(graph, deps, out, &point.start));
    nodes[c] = add_node(plan, c, args, graph, deps, out, profiled);
    out.names.emplace(nodes[c], command_label(plan, c, *root_));
    ++out.node_count;
    if (profiled) {
      ends[c] = add_event_node(graph, {nodes[c]}, out, &point.end);
      out.points.push_back(point);
    }
  }
}

cudaGraphNode_t GraphBuilder::add_node(const Plan& plan, std::uint32_t c, const ArgumentStore& args,
                                       cudaGraph_t graph, const std::vector<cudaGraphNode_t>& deps,
                                       BuiltGraph& out, bool profiled) {
  const RecordedCommand& cmd = plan.command(c);
  const std::string name = command_label(plan, c, *root_);
  cudaGraphNode_t node = nullptr;
  switch (cmd.kind) {
    case CommandKind::kernel:
    case CommandKind::parallel_for: {
      KernelLaunch launch = kernel_launch(plan, c, args, device_);
      const cudaKernelNodeParams p = kernel_node_params(launch);
      CMDGRAPH_CUDA(name, cudaGraphAddKernelNode, &node, graph, deps.data(), deps.size(), &p);
      break;
    }
    case CommandKind::copy: {
      const auto& cp = args.get<CopySpec>(std::get<CopyPayload>(cmd.payload).spec);
      CMDGRAPH_CUDA(name, cudaGraphAddMemcpyNode1D, &node, graph, deps.data(), deps.size(),
                    cp.dst.data, cp.src.data, cp.dst.bytes, cudaMemcpyDefault);
      break;
    }
    case CommandKind::fill: {
      const cudaMemsetParams p =
          memset_node_params(args.get<FillSpec>(std::get<FillPayload>(cmd.payload).spec));
      CMDGRAPH_CUDA(name, cudaGraphAddMemsetNode, &node, graph, deps.data(), deps.size(), &p);
      break;
    }
    case CommandKind::host: {
      cudaHostNodeParams p{};
      p.fn = &run_host_callback;
      p.userData = out.callbacks.add(std::get<HostPayload>(cmd.payload).task, name, errors_);
      CMDGRAPH_CUDA(name, cudaGraphAddHostNode, &node, graph, deps.data(), deps.size(), &p);
      break;
    }
    case CommandKind::event_record:
      CMDGRAPH_CUDA(name, cudaGraphAddEventRecordNode, &node, graph, deps.data(), deps.size(),
                    std::get<EventPayload>(cmd.payload).event->native());
      break;
    case CommandKind::event_wait:
      CMDGRAPH_CUDA(name, cudaGraphAddEventWaitNode, &node, graph, deps.data(), deps.size(),
                    std::get<EventPayload>(cmd.payload).event->native());
      break;
    case CommandKind::nested: {
      const Plan& inner = *plan.nested[c];
      cuda::Graph child = cuda::create_graph(name);
      std::vector<cudaGraphNode_t> inner_nodes;
      add_nodes(inner, inner.recording->arguments(), child.get(), inner_nodes, out, nullptr,
                profiled);
      // The child is cloned into the node; ours is destroyed at the end of this scope.
      CMDGRAPH_CUDA(name, cudaGraphAddChildGraphNode, &node, graph, deps.data(), deps.size(),
                    child.get());
      break;
    }
    case CommandKind::capture: {
      cuda::Graph child = capture(plan, c);
      CMDGRAPH_CUDA(name, cudaGraphAddChildGraphNode, &node, graph, deps.data(), deps.size(),
                    child.get());
      break;
    }
    case CommandKind::barrier:
      CMDGRAPH_CUDA(name, cudaGraphAddEmptyNode, &node, graph, deps.data(), deps.size());
      break;
    case CommandKind::loop:
      node = add_loop(plan, c, args, graph, deps, out);
      break;
  }
  return node;
}

// A one-thread kernel sets the condition before the first pass; a conditional WHILE node runs
// the body, which ends with the same kernel setting it for the next pass. The passes never
// return to the host.
cudaGraphNode_t GraphBuilder::add_loop(const Plan& plan, std::uint32_t c, const ArgumentStore& args,
                                       cudaGraph_t graph, const std::vector<cudaGraphNode_t>& deps,
                                       BuiltGraph& out) {
  const std::string name = command_label(plan, c, *root_);
  const auto& loop = std::get<LoopPayload>(plan.command(c).payload);
  cudaGraphConditionalHandle handle = 0;
  CMDGRAPH_CUDA(name, cudaGraphConditionalHandleCreate, &handle, graph, 0u, 0u);
  // Kernel node parameters are copied when a node is made: pointers to locals are fine.
  void* params[] = {const_cast<void*>(args.data(loop.condition)), &handle};
  cudaKernelNodeParams check{};
  check.func = const_cast<void*>(loop.device_kernel);
  check.gridDim = dim3(1);
  check.blockDim = dim3(1);
  check.kernelParams = params;
  cudaGraphNode_t first = nullptr;
  CMDGRAPH_CUDA(name, cudaGraphAddKernelNode, &first, graph, deps.data(), deps.size(), &check);

  cudaGraphNodeParams p{};
  p.type = cudaGraphNodeTypeConditional;
  p.conditional.handle = handle;
  p.conditional.type = cudaGraphCondTypeWhile;
  p.conditional.size = 1;
  cudaGraphNode_t node = nullptr;
  CMDGRAPH_CUDA(name, cudaGraphAddNode, &node, graph, &first, nullptr, std::size_t{1}, &p);

  const Plan& body = *plan.nested[c];
  std::vector<cudaGraphNode_t> body_nodes;
  add_nodes(body, body.recording->arguments(), p.conditional.phGraph_out[0], body_nodes, out,
            nullptr, false);
  std::vector<cudaGraphNode_t> last;  // the body's sinks
  for (std::uint32_t k = 0; k < body.size(); ++k) {
    if (body.children[k].empty()) last.push_back(body_nodes[k]);
  }
  cudaGraphNode_t again = nullptr;
  CMDGRAPH_CUDA(name, cudaGraphAddKernelNode, &again, p.conditional.phGraph_out[0], last.data(),
                last.size(), &check);
  out.names.emplace(first, name);
  out.names.emplace(again, name);
  out.node_count += 2;
  return node;
}

cuda::Graph GraphBuilder::capture(const Plan& plan, std::uint32_t c) {
  const std::string name = command_label(plan, c, *root_);
  cuda::Graph child = cuda::create_graph(name);
  // Thread-local mode: calls from this thread that are unsafe during capture are refused, and
  // other threads are not disturbed.
  CMDGRAPH_CUDA(name, cudaStreamBeginCaptureToGraph, capture_stream_, child.get(), nullptr,
                nullptr, std::size_t{0}, cudaStreamCaptureModeThreadLocal);
  std::exception_ptr thrown;
  try {
    std::get<CapturePayload>(plan.command(c).payload).task->run(capture_stream_);
  } catch (...) {
    thrown = task_failure("capture", name);
  }
  // Always end the capture, so the stream is usable again whatever happened inside.
  cudaGraph_t captured = nullptr;
  const cudaError_t ended =
      cuda::try_call([&] { return cudaStreamEndCapture(capture_stream_, &captured); });
  if (thrown) std::rethrow_exception(thrown);
  if (ended != cudaSuccess) {
    cuda::clear_error();
    throw Error(errc::unsupported,
                "command '" + name + "' cannot be captured into a graph: " +
                    cuda::describe(ended) + "; the callable made a call that stream capture "
                    "forbids, such as a synchronization or an allocation",
                {name}, static_cast<int>(ended));
  }
  return child;
}

}  // namespace cmdgraph::detail
