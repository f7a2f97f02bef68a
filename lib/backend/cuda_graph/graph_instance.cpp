// instantiate(): a plan built as a graph, instantiated with its upload started.
#include "backend/cuda_graph/graph_instance.hpp"

#include "cuda/graph_ops.hpp"
#include "cuda/stream_ops.hpp"
#include "observe/stopwatch.hpp"

#include <cmdgraph/error.hpp>

#include <algorithm>
#include <chrono>
#include <optional>
#include <utility>
#include <vector>

namespace cmdgraph::detail {
Instance instantiate(const Plan& plan, ExecutableValues& args, TransientBinding& transients,
                     InstanceOptions options) {
  const int device = options.build.device;
  const cuda::ScopedDevice on(device);
  const cuda::Served served = cuda::for_executable(plan.buffer_name);
  Instance in;
  in.host_errors = options.errors ? std::move(options.errors)
                                  : std::make_shared<HostErrors>(
                                        std::max<std::uint32_t>(1, count_host_tasks(plan)));
  options.build.errors = in.host_errors.get();
  in.built = GraphBuilder(options.build).build(plan, args, transients, false, options.shaping);
  std::vector<std::uint64_t> ids;
  if (in.built.cupti) ids = node_ids(*in.built.cupti, served);

  // CUPTI mode: CUPTI collects while the graph is instantiated, as the hand-written probe of
  // issue 16 did (CUPTI sees the graph as it is made), and only what the graph runs, as its
  // traced launches do (enqueue_traced).
  std::optional<cuda::cupti::Session::Collecting> collecting;
  if (in.built.cupti) {
    collecting.emplace(*options.tracing, in.built.cupti->work);
    if (!collecting->error().empty()) {
      throw cuda::cupti::Refused(errc::cuda_error,
                                 "CUPTI refused to collect activity records for executable '" +
                                     plan.buffer_name + "': " + collecting->error());
    }
  }
  const auto start = std::chrono::steady_clock::now();
  cuda::Stream stream = cuda::create_stream(device, 0, served);
  {
    // Instantiating clones every node: CUPTI's records name the clones.
    std::optional<cuda::cupti::CloneLog> clones;
    if (in.built.cupti) clones.emplace();
    in.exec = cuda::instantiate(in.built.graph.get(), stream.get(),
                                {in.built.node_priority, options.build.device_launch}, served,
                                [&](cudaGraphNode_t node) { return in.built.name_of(node); });
    if (clones) map_nodes(*in.built.cupti, ids, clones->take(served));
  }
  collecting.reset();
  in.uploaded = cuda::create_event(device, false, served);
  cuda::record_event(in.uploaded.get(), stream.get(), served);
  in.upload = std::move(stream);
  if (options.instantiate_ms) *options.instantiate_ms = ms_since(start);

  in.context = launch_context(plan, device, in.host_errors, std::make_shared<EventPool>(device));
  return in;
}

// Why an instantiated graph's allocation nodes cannot serve `now`'s transients (one differs
// in size from `before`'s); empty when they can.
std::string resized_transient(const Plan& before, const Plan& now) {
  for (std::uint32_t t = 0; t < now.memory.list.size(); ++t) {
    const std::size_t was = before.memory.list[t].range->bytes();
    const std::size_t is = now.memory.list[t].range->bytes();
    if (was != is) {
      return "transient memory '" + now.name(now.memory.list[t].alloc) + "' takes " +
             std::to_string(is) + " bytes, was " + std::to_string(was);
    }
  }
  return {};
}

}  // namespace cmdgraph::detail
