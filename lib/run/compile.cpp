// compile(): drives the stages, record -> plan -> backend, and times each.
#include "backend/host/host_backend.hpp"
#include "observe/nvtx.hpp"
#if CMDGRAPH_HAVE_CUDA
#include "backend/cuda_graph/graph_backend.hpp"
#include "backend/streams/streams_backend.hpp"
#include "cuda/handles.hpp"
#endif
#include "plan/plan.hpp"
#include "record/recording.hpp"

#include <cmdgraph/command_buffer.hpp>
#include <cmdgraph/error.hpp>
#include <cmdgraph/executable.hpp>

#include <chrono>

namespace cmdgraph {
namespace {

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

std::unique_ptr<detail::ExecutableImpl> lower(std::shared_ptr<const detail::Plan> plan,
                                              Device device, const CompileOptions& options,
                                              ExecutableStats stats) {
  if (device.is_host()) {
    if (options.backend != Backend::automatic && options.backend != Backend::host) {
      throw Error(errc::unsupported, std::string("backend ") + to_string(options.backend) +
                                         " needs a CUDA device; '" + plan->recording->name() +
                                         "' was compiled for the host");
    }
    stats.backend_reason = options.backend == Backend::host ? "requested" : "host device";
    return detail::lower_to_host(std::move(plan), options, std::move(stats));
  }
  if (options.backend == Backend::host) {
    throw Error(errc::device_mismatch, "the host backend runs on Device::host(), not on " +
                                           device.name());
  }
#if CMDGRAPH_HAVE_CUDA
  const detail::cuda::ScopedDevice on(device.ordinal());
  switch (options.backend) {
    case Backend::streams:
      stats.backend_reason = "requested";
      return detail::lower_to_streams(std::move(plan), device, options, std::move(stats));
    case Backend::cuda_graph:
      stats.backend_reason = "requested";
      return detail::lower_to_cuda_graph(std::move(plan), device, options, std::move(stats));
    default:
      break;
  }
  // Automatic: a graph, unless a command cannot become a graph node; then streams, which run
  // it at each launch instead.
  try {
    stats.backend_reason = "CUDA device: one graph launch per run";
    return detail::lower_to_cuda_graph(plan, device, options, stats);
  } catch (const Error& e) {
    // Streams cannot run loops: for a buffer with one, the graph's reason is the answer.
    if (e.code() != errc::unsupported || detail::find_command(*plan, CommandKind::loop)) throw;
    stats.backend_reason = std::string("streams, because ") + e.what();
    return detail::lower_to_streams(std::move(plan), device, options, std::move(stats));
  }
#else
  throw Error(errc::unsupported, "this build of cmdgraph has no CUDA backends");
#endif
}

}  // namespace

Executable compile(CommandBuffer& commands, Device device, const CompileOptions& options) {
  const std::shared_ptr<detail::Recording>& rec = commands.recording();
  const detail::Recording::UseGuard guard(*rec);
  const detail::NvtxRange range("compile " + rec->name());

  ExecutableStats stats;
  const auto start = std::chrono::steady_clock::now();
  std::shared_ptr<const detail::Plan> plan = detail::build_plan(rec);
  stats.plan_ms = ms_since(start);
  stats.commands = plan->size();
  stats.edges_recorded = plan->edges_recorded;
  stats.edges_reduced = plan->children.edges();
  stats.levels = plan->level_count;

  const auto lowering = std::chrono::steady_clock::now();
  auto impl = lower(std::move(plan), device, options, std::move(stats));
  impl->stats().lower_ms = ms_since(lowering) - impl->stats().instantiate_ms;
  rec->seal();
  return Executable(std::move(impl));
}

}  // namespace cmdgraph
