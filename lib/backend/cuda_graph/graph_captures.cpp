// Stream capture for the graph builder: capture commands run once before a build
// (capture_all) or while building (GraphBuilder::capture), and collectives captured from NCCL.
#include "backend/cuda_graph/graph_builder.hpp"

#include "backend/cuda_commands/collective_forms.hpp"
#include "cuda/graph_ops.hpp"
#include "error/task_failure.hpp"

#include <cmdgraph/error.hpp>

#include <exception>
#include <utility>

namespace cmdgraph::detail {
namespace {

// Runs capture command `c` of `plan` on `stream` and returns what it enqueued as a graph; a
// refusal by stream capture becomes Error(unsupported) in `refusal`.
cuda::Graph capture_on(const Plan& plan, std::uint32_t c, const std::string& name,
                       cudaStream_t stream, std::optional<Error>& refusal) {
  cuda::begin_capture(stream, name);
  std::exception_ptr thrown;
  try {
    capture_task(plan.payload(c))->run(stream);
  } catch (...) {
    thrown = task_failure("capture", name);
  }
  // Always end the capture, so the stream is usable again whatever happened inside.
  cuda::Graph captured;
  const cudaError_t ended = cuda::end_capture(stream, captured);
  if (thrown) std::rethrow_exception(thrown);
  if (ended != cudaSuccess) refusal.emplace(capture_refused(name, ended));
  return captured;
}

}  // namespace

cuda::Graph capture_collective(const CollectivePayload& p, const ArgumentStore& args,
                               cudaStream_t stream, cuda::Served served) {
  cuda::begin_capture(stream, served);
  std::exception_ptr thrown;
  try {
    enqueue_collective(p, args, stream, served);
  } catch (...) {
    thrown = std::current_exception();
  }
  cuda::Graph captured;
  const cudaError_t ended = cuda::end_capture(stream, captured);
  if (thrown) std::rethrow_exception(thrown);
  if (ended != cudaSuccess) cuda::fail(ended, "cudaStreamEndCapture", served);
  return captured;
}

namespace {

// Captures every capture command of `plan` and its bodies on `stream`, made when the first
// is found.
void capture_in(const Plan& plan, const Plan& root, int device, cuda::Stream& stream,
                Captures& out) {
  for (std::uint32_t c = 0; c < plan.size() && !out.refusal; ++c) {
    if (capture_task(plan.payload(c))) {
      if (!stream) stream = cuda::create_stream(device, 0, cuda::for_executable(root.buffer_name));
      cuda::Graph g =
          capture_on(plan, c, command_label(plan, c, root), stream.get(), out.refusal);
      if (g) out.graphs.emplace(std::make_pair(&plan, c), std::move(g));
    }
    for (const auto& body : plan.bodies_of(c)) capture_in(*body, root, device, stream, out);
  }
}

}  // namespace

Error capture_refused(const std::string& name, cudaError_t status) {
  return Error(errc::unsupported,
               "command '" + name + "' cannot be captured into a graph: " +
                   cuda::describe(status) + "; the callable made a call that stream capture "
                   "forbids, such as a synchronization or an allocation",
               std::vector<std::string>{name}, static_cast<int>(status));
}

Captures capture_all(const Plan& plan, int device) {
  Captures out;
  const cuda::ScopedDevice on(device);
  cuda::Stream stream;
  capture_in(plan, plan, device, stream, out);
  return out;
}

cuda::Stream& GraphBuilder::capture_stream() {
  if (!capture_stream_) {
    capture_stream_ = cuda::create_stream(device_, 0, cuda::for_executable(root_->buffer_name));
  }
  return capture_stream_;
}

cuda::Graph GraphBuilder::capture(const Plan& plan, std::uint32_t c) {
  std::optional<Error> refusal;
  cuda::Graph child = capture_on(plan, c, command_label(plan, c, *root_), capture_stream().get(),
                                 refusal);
  if (refusal) throw *refusal;
  return child;
}

}  // namespace cmdgraph::detail
