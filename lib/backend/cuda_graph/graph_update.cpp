// Updates in place: one command's node of an instantiated graph given its new parameters,
// through the same graph forms that built it.
#include "backend/cuda_graph/graph_builder.hpp"

#include "cuda/graph_ops.hpp"

#include <stdexcept>
#include <utility>

namespace cmdgraph::detail {
namespace {

// Where an updated command's node is: its parameters are set in the instantiated graph.
class ExecSite final : public GraphSite {
 public:
  ExecSite(const Plan& plan, std::uint32_t c, const ArgumentStore& args, int device,
           cudaGraphExec_t exec, cudaGraphNode_t node)
      : plan_(plan), c_(c), args_(args), device_(device), exec_(exec), node_(node),
        name_(plan.name(c)) {}

  const ArgumentStore& args() const override { return args_; }
  int device() const override { return device_; }
  cuda::Served served() const override { return name_; }
  cudaGraphNode_t place(cuda::NodeSpec& spec) override {
    cuda::set_node(exec_, node_, spec, name_);
    return node_;
  }
  // Only updatable kinds (kernels, parallel_for, copies, fills, collectives) are updated node
  // by node.
  void* host_callback(const std::shared_ptr<HostTask>&) override { return not_updatable(); }
  cudaGraphNode_t body_graph() override { return not_updatable(); }
  cudaGraphNode_t captured_graph(const CapturePayload&) override { return not_updatable(); }
  // A collective is captured again with its new values, and the node takes the new graph.
  cudaGraphNode_t collective_graph(const CollectivePayload& p) override {
    cuda::Stream stream = cuda::create_stream(device_, 0, name_);
    captured_ = capture_collective(p, args_, stream.get(), name_);
    cuda::set_child_graph(exec_, node_, captured_.get(), name_);
    return node_;
  }
  cuda::Graph take_captured() noexcept { return std::move(captured_); }
  cudaGraphNode_t conditional(cudaGraphConditionalNodeType, const Condition&) override {
    return not_updatable();
  }
  cudaGraphNode_t indirect(cuda::NodeSpec&, const IndirectDispatch&) override {
    return not_updatable();
  }
  void allocated(void*) override { not_updatable(); }
  void* to_free() const override { return not_updatable(); }

 private:
  [[noreturn]] static std::nullptr_t not_updatable() {
    throw std::logic_error("cmdgraph: a command of a kind that is not updatable was updated");
  }
  const Plan& plan_;
  std::uint32_t c_;
  const ArgumentStore& args_;
  int device_;
  cudaGraphExec_t exec_;
  cudaGraphNode_t node_;
  std::string name_;
  cuda::Graph captured_;
};

}  // namespace

cuda::Graph GraphBuilder::update_node(const Plan& plan, std::uint32_t c,
                                      const ArgumentStore& args, int device,
                                      cudaGraphExec_t exec, cudaGraphNode_t node) {
  ExecSite site(plan, c, args, device, exec, node);
  add_graph_node(plan.payload(c), site);
  return site.take_captured();
}

}  // namespace cmdgraph::detail
