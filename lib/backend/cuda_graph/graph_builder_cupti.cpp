// GraphBuilder in CUPTI mode: which command each node's activity records time, and the shapes
// that keep every kernel, copy and fill a top-level node of the graph (executed buffers inlined,
// captures captured into the graph itself), with marker fills around what still runs nested.
//
// Why top-level: CUPTI's records carry the id of the node of the *instantiated* graph, and
// instantiation reports (GRAPHNODE_CLONED) which of our nodes each of its top-level nodes was
// cloned from. On the H200 (run 49) the records of nodes inside child graphs carried ids that
// no report named, whether we had built the child graph's nodes ourselves or stream capture
// had: nested nodes cannot be mapped back through anything CUPTI documents. So nothing that
// must be timed node by node is nested; what CUDA can only run nested (conditional bodies,
// NCCL's captured collectives) is timed from top-level nodes around it.
#include "backend/cuda_graph/graph_builder.hpp"

#include "cuda/graph_ops.hpp"
#include "cuda/runtime.hpp"
#include "error/task_failure.hpp"

#include <algorithm>
#include <exception>

namespace cmdgraph::detail {


std::uint32_t GraphBuilder::timed_run(const Plan& plan, std::uint32_t c,
                                      std::vector<std::uint32_t>& run_of) {
  if (fold_into_ != no_timed) return fold_into_;  // a conditional body: timed as its owner
  TimedCommand timed{&plan, c, owner_, {}, nullptr, false};
  for (std::uint32_t p : plan.dag->parents[c]) timed.parents.push_back(run_of[p]);
  std::vector<TimedCommand>& commands = out_->cupti->commands;
  run_of[c] = static_cast<std::uint32_t>(commands.size());
  commands.push_back(std::move(timed));
  return run_of[c];
}

// `work`: the work bits (cuda::cupti::work) of what the node runs; a node that runs a kernel,
// copy or fill leaves a record, which a traced launch then collects.
void GraphBuilder::note(cudaGraphNode_t node, std::uint32_t timed, unsigned work) {
  out_->cupti->work |= work;
  // A conditional body may run no pass at all: what is in it is not expected.
  const bool expected = work != 0 && fold_into_ == no_timed;
  out_->cupti->nodes.push_back({node, timed, expected});
  if (expected) out_->cupti->commands[timed].expects_record = true;
}

// Every node of a graph nested in a child graph node, and of the graphs nested in those: noted
// in case CUPTI's clone reports do name them, never expected (see the file's comment).
void GraphBuilder::note_nested(cudaGraph_t graph, std::uint32_t timed, cuda::Served served) {
  for (cudaGraphNode_t node : cuda::graph_nodes(graph, served)) {
    const cudaGraphNodeType type = cuda::node_type(node, served);
    if (type == cudaGraphNodeTypeGraph) {
      note_nested(cuda::embedded_graph(node, served), timed, served);
    } else {
      note(node, timed, 0);
      out_->cupti->work |= cuda::cupti::work_of(type);  // in case a clone report names it
    }
  }
}

// A 4-byte fill of memory of the graph's own, after `deps`: a top-level node whose record
// marks, for `timed` (command `c` of `plan`), when what it follows had finished.
cudaGraphNode_t GraphBuilder::marker(cudaGraph_t graph, std::span<const cudaGraphNode_t> deps,
                                     std::uint32_t timed, const Plan& plan, std::uint32_t c) {
  const std::string name = command_label(plan, c, *root_);
  if (!out_->marker_memory) {
    const int device = device_;
    void* memory = cuda::allocate_device(device, sizeof(std::uint32_t));
    out_->marker_memory =
        std::shared_ptr<void>(memory, [device](void* p) { cuda::free_device(device, p); });
  }
  cuda::NodeSpec spec = cuda::NodeSpec::of(cudaGraphNodeTypeMemset);
  cudaMemsetParamsV2& m = spec.params.memset;
  m.dst = out_->marker_memory.get();
  m.value = 0;
  m.elementSize = sizeof(std::uint32_t);
  m.width = 1;
  m.height = 1;
  const cudaGraphNode_t node = cuda::add_node(graph, deps, spec, name);
  note(node, timed, cuda::cupti::work::fills);
  out_->origins.push_back({node, &plan, c});
  return node;
}

// Stream capture straight into `graph` (cudaStreamBeginCaptureToGraph), after `deps`: what the
// callable enqueues becomes top-level nodes of ours, each noted for `timed`. The command's node
// is an empty one after the capture's last nodes. The callable runs here, once more than
// capture_all ran it: a captured graph cannot be copied into another node by node (its
// allocations, nested graphs and conditionals have no copy), only captured again.
cudaGraphNode_t GraphBuilder::capture_inline(const Plan& plan, std::uint32_t c, cudaGraph_t graph,
                                             std::span<const cudaGraphNode_t> deps,
                                             std::uint32_t timed) {
  const std::string name = command_label(plan, c, *root_);
  std::vector<cudaGraphNode_t> before = cuda::graph_nodes(graph, name);
  std::sort(before.begin(), before.end());
  const cudaStream_t stream = capture_stream().get();
  cuda::begin_capture_into(stream, graph, deps, name);
  std::exception_ptr thrown;
  try {
    capture_task(plan.payload(c))->run(stream);
  } catch (...) {
    thrown = task_failure("capture", name);
  }
  // Always end the capture, so the stream is usable again whatever happened inside.
  std::vector<cudaGraphNode_t> last;
  cudaError_t status = cuda::capture_frontier(stream, last);
  const cudaError_t ended = cuda::end_capture_into(stream);
  if (thrown) std::rethrow_exception(thrown);
  if (status == cudaSuccess) status = ended;
  if (status != cudaSuccess) throw capture_refused(name, status);
  for (cudaGraphNode_t node : cuda::graph_nodes(graph, name)) {
    if (std::binary_search(before.begin(), before.end(), node)) continue;
    const cudaGraphNodeType type = cuda::node_type(node, name);
    if (type == cudaGraphNodeTypeGraph) {
      note_nested(cuda::embedded_graph(node, name), timed, name);
    } else {
      note(node, timed, cuda::cupti::work_of(type));
    }
  }
  cuda::NodeSpec empty = cuda::NodeSpec::of(cudaGraphNodeTypeEmpty);
  return cuda::add_node(graph, last, empty, name);
}

}  // namespace cmdgraph::detail
