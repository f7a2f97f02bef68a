// GraphBuilder's shapes of several nodes for one command: a conditional command (its
// condition kernel, its conditional node and its body graphs) and an indirect kernel (its
// dispatcher and its device-updatable node).
#include "backend/cuda_graph/graph_builder.hpp"

#include "cuda/dispatch.hpp"
#include "cuda/graph_ops.hpp"

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace cmdgraph::detail {

// The dispatcher, a one-thread kernel after the command's parents, reads the grid, count or
// flag and sizes or enables the kernel's node, which follows it, on the device.
cudaGraphNode_t GraphBuilder::add_indirect(const Plan& plan, std::uint32_t c,
                                           cuda::NodeSpec& work, const IndirectDispatch& dispatch,
                                           cudaGraph_t graph,
                                           std::span<const cudaGraphNode_t> deps,
                                           std::uint32_t timed, std::optional<int> priority) {
  const std::string name = command_label(plan, c, *root_);
  const cudaGraphNode_t kernel = cuda::add_node(graph, {}, work, name);
  if (priority) {
    cuda::set_kernel_priority(kernel, *priority, name);
    out_->node_priority = true;
  }
  cudaGraphDeviceNode_t handle = cuda::make_device_updatable(kernel, name);
  if (!reports_) throw std::logic_error("cmdgraph: an indirect command built without reports");
  out_->reports = reports_;
  void* report = out_->reports->at(plan, c);
  // Its own, not its command's: a body executed twice holds two nodes of one command.
  cuda::DispatchState* state = out_->dispatch_states.next(device_);
  const void* source = dispatch.source;
  dim3 limit = dispatch.limit;
  cuda::CountDispatch count = dispatch.count;
  // Kernel node parameters are copied when a node is made: pointers to locals are fine.
  void* grid_params[] = {&handle, const_cast<void**>(&source), &limit, &report, &state};
  void* count_params[] = {&handle, const_cast<void**>(&source), &count, &report, &state};
  void* flag_params[] = {&handle, const_cast<void**>(&source), &state};
  cuda::NodeSpec dispatcher = cuda::NodeSpec::of(cudaGraphNodeTypeKernel);
  dispatcher.params.kernel.gridDim = dim3(1);
  dispatcher.params.kernel.blockDim = dim3(1);
  if (reads_flag(dispatch.form)) {
    dispatcher.params.kernel.func = const_cast<void*>(cuda::flag_dispatcher());
    dispatcher.params.kernel.kernelParams = flag_params;
  } else if (dispatch.form == IndirectForm::count) {
    dispatcher.params.kernel.func = const_cast<void*>(cuda::count_dispatcher());
    dispatcher.params.kernel.kernelParams = count_params;
  } else {
    dispatcher.params.kernel.func = const_cast<void*>(cuda::grid_dispatcher());
    dispatcher.params.kernel.kernelParams = grid_params;
  }
  const cudaGraphNode_t first = cuda::add_node(graph, deps, dispatcher, name);
  cuda::add_edge(graph, first, kernel, name);
  if (cupti_) {
    note(first, timed, cuda::cupti::work::kernels);
    note(kernel, timed, cuda::cupti::work::kernels);
  }
  out_->origins.push_back({first, &plan, c});
  ++out_->node_count;
  return kernel;
}

// A one-thread kernel sets the condition before the conditional node, whose body graphs are
// the command's bodies in its kind's order; a WHILE body ends with the same kernel setting it
// for the next pass. The passes never return to the host.
cudaGraphNode_t GraphBuilder::add_conditional(const Plan& plan, std::uint32_t c,
                                              cudaGraphConditionalNodeType type,
                                              const Condition& condition,
                                              const ArgumentStore& args, cudaGraph_t graph,
                                              std::span<const cudaGraphNode_t> deps,
                                              std::uint32_t timed, std::optional<int> priority) {
  const std::string name = command_label(plan, c, *root_);
  cudaGraphConditionalHandle handle = cuda::create_conditional_handle(graph, name);
  // Kernel node parameters are copied when a node is made: pointers to locals are fine.
  void* params[] = {const_cast<void*>(args.data(condition.functor)), &handle};
  cuda::NodeSpec check = cuda::NodeSpec::of(cudaGraphNodeTypeKernel);
  check.params.kernel.func = const_cast<void*>(condition.device_kernel);
  check.params.kernel.gridDim = dim3(1);
  check.params.kernel.blockDim = dim3(1);
  check.params.kernel.kernelParams = params;
  const cudaGraphNode_t first = cuda::add_node(graph, deps, check, name);
  if (cupti_) note(first, timed, cuda::cupti::work::kernels);

  const auto bodies = plan.bodies_of(c);
  cuda::NodeSpec conditional = cuda::NodeSpec::of(cudaGraphNodeTypeConditional);
  conditional.params.conditional.handle = handle;
  conditional.params.conditional.type = type;
  conditional.params.conditional.size = static_cast<unsigned>(bodies.size());
  const cudaGraphNode_t node = cuda::add_node(graph, {&first, 1}, conditional, name);
  // CUPTI: what runs in the bodies is timed as the conditional itself.
  const std::uint32_t fold = std::exchange(fold_into_, fold_into_ == no_timed ? timed : fold_into_);
  out_->origins.push_back({first, &plan, c});
  ++out_->node_count;
  // No node in a conditional's body is set alone: updates take the body whole.
  const auto path = std::exchange(path_, std::nullopt);
  for (std::size_t b = 0; b < bodies.size(); ++b) {
    const Plan& body = *bodies[b];
    cudaGraph_t body_graph = conditional.params.conditional.phGraph_out[b];
    std::vector<cudaGraphNode_t> body_nodes;
    add_nodes(body, body.arguments(), body_graph, body_nodes, nullptr, false, nullptr, priority);
    if (type != cudaGraphCondTypeWhile) {
      // An empty body (a case that does nothing) gets one empty node: CUDA's documentation
      // does not say that a body graph may have none.
      if (body.size() == 0) {
        cuda::NodeSpec empty = cuda::NodeSpec::of(cudaGraphNodeTypeEmpty);
        cuda::add_node(body_graph, {}, empty, name);
      }
      continue;
    }
    std::vector<cudaGraphNode_t> last;  // the body's sinks
    for (std::uint32_t k = 0; k < body.size(); ++k) {
      if (body.dag->children[k].empty()) last.push_back(body_nodes[k]);
    }
    const cudaGraphNode_t again = cuda::add_node(body_graph, last, check, name);
    if (cupti_) note(again, timed, cuda::cupti::work::kernels);
    out_->origins.push_back({again, &plan, c});
    ++out_->node_count;
  }
  path_ = path;
  fold_into_ = fold;
  // CUPTI: the end of the passes, which run inside the node where no record is ours to read.
  if (cupti_ && fold == no_timed) return marker(graph, {&node, 1}, timed, plan, c);
  return node;
}

}  // namespace cmdgraph::detail
