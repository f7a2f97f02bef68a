// compile(): drives the stages, record -> plan -> backend (chosen from the plan before lowering),
// and times each.
#include "backend/host/host_backend.hpp"
#include "observe/nvtx.hpp"
#include "observe/stopwatch.hpp"
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

// How an executable not on the cuda_graph backend is timed (the graph backend decides its own:
// CUPTI where usable). Throws for a mode it cannot have.
void choose_profile_mode(const detail::Plan& plan, const CompileOptions& options, Backend backend,
                         ExecutableStats& stats) {
  const ProfileMode asked = options.profile.mode;
  if (asked == ProfileMode::off) return;
  if (backend == Backend::host) {
    stats.profile_mode = ProfileMode::host_clock;
    stats.profile_reason = "the host backend times commands on the host's steady clock";
    return;
  }
  if (asked == ProfileMode::cupti) {
    throw Error(errc::unsupported,
                "executable '" + plan.buffer_name + "' runs on the streams backend, which "
                "CUPTI mode does not time (it times CUDA graphs): profile with events");
  }
  stats.profile_mode = ProfileMode::events;
  stats.profile_reason = asked == ProfileMode::events
                             ? "requested"
                             : "the streams backend times commands with events";
}

void check_profile_options(const CompileOptions& options, Device device,
                           const std::string& name) {
  if (options.profile_every == 0) {
    throw Error(errc::invalid_argument, "executable '" + name +
                                            "': CompileOptions::profile_every must be at least 1");
  }
  if (options.shape == GraphShape::lanes(0)) {
    throw Error(errc::invalid_argument, "executable '" + name +
                                            "': GraphShape::lanes needs at least 1 lane");
  }
  if (options.profile.mode == ProfileMode::host_clock && !device.is_host()) {
    throw Error(errc::invalid_argument,
                "executable '" + name + "': ProfileMode::host_clock times the host backend only; "
                "ask for automatic, events or cupti on " + device.name());
  }
}

// Device launch needs one CUDA graph, and no event nodes in it.
void check_device_launch(const CompileOptions& options, Device device, const std::string& name) {
  if (!options.device_launch) return;
  const std::string asked = "executable '" + name + "' is compiled for device launch "
                            "(CompileOptions::device_launch), ";
  if (device.is_host()) {
    throw Error(errc::unsupported, asked + "which needs a CUDA device and the cuda_graph "
                                   "backend; it was compiled for the host");
  }
  if (options.backend == Backend::streams) {
    throw Error(errc::unsupported, asked + "which needs the cuda_graph backend, not streams");
  }
  if (options.profile) {
    throw Error(errc::unsupported, asked + "which is not profiled: a device graph holds "
                                   "no event nodes, and its launches from the device are no "
                                   "launches the host could time");
  }
}

std::unique_ptr<detail::ExecutableImpl> lower(std::shared_ptr<const detail::Plan> plan,
                                              Device device, const CompileOptions& options,
                                              ExecutableStats stats) {
  check_profile_options(options, device, plan->buffer_name);
  check_device_launch(options, device, plan->buffer_name);
  if (device.is_host()) {
    if (options.backend != Backend::automatic && options.backend != Backend::host) {
      throw Error(errc::unsupported, std::string("backend ") + to_string(options.backend) +
                                         " needs a CUDA device; '" + plan->buffer_name +
                                         "' was compiled for the host");
    }
    stats.backend_reason = options.backend == Backend::host ? "requested" : "host device";
    choose_profile_mode(*plan, options, Backend::host, stats);
    return detail::lower_to_host(std::move(plan), options, std::move(stats));
  }
  if (options.backend == Backend::host) {
    throw Error(errc::device_mismatch, "the host backend runs on Device::host(), not on " +
                                           device.name());
  }
#if CMDGRAPH_HAVE_CUDA
  const detail::cuda::ScopedDevice on(device.ordinal());
  if (options.backend == Backend::streams) {
    stats.backend_reason = "requested";
    choose_profile_mode(*plan, options, Backend::streams, stats);
    return detail::lower_to_streams(std::move(plan), device, options, std::move(stats));
  }
  // What stream capture makes of each capture command is the one fact the plan cannot tell:
  // capture them first, once, and decide from that.
  detail::Captures captures = detail::capture_all(*plan, device.ordinal());
  if (options.backend == Backend::cuda_graph || options.device_launch) {
    if (captures.refusal) throw *captures.refusal;
    stats.backend_reason = options.backend == Backend::cuda_graph
                               ? "requested"
                               : "device launch: one graph, launched from host or device";
  } else if (!captures.refusal) {
    stats.backend_reason = "CUDA device: one graph launch per run";
  } else {
    // Streams run the capture's callable at each launch instead.
    stats.backend_reason = std::string("streams, because ") + captures.refusal->what();
    choose_profile_mode(*plan, options, Backend::streams, stats);
    return detail::lower_to_streams(std::move(plan), device, options, std::move(stats));
  }
  return detail::lower_to_cuda_graph(std::move(plan), device, options, std::move(stats),
                                     std::move(captures));
#else
  throw Error(errc::unsupported, "this build of cmdgraph has no CUDA backends");
#endif
}

// What the plan is built for: lane edges when the backend may be the cuda_graph one (unless
// stream capture refuses a capture command, it is).
detail::PlanOptions plan_options(Device device, const CompileOptions& options) {
  detail::PlanOptions plan{options.hazards, std::nullopt};
  const bool graph = options.backend == Backend::automatic || options.backend == Backend::cuda_graph;
  if (!device.is_host() && graph && options.shape != GraphShape::lanes(0)) plan.shape = options.shape;
  return plan;
}

// Declared accesses, inferred edges, validated pairs and conditional commands of the plan and
// every body in it (the unneeded edges are counted when stats() is first read).
void add_hazard_counts(const detail::Plan& plan, ExecutableStats& stats) {
  stats.accesses_declared += plan.hazards.declared;
  stats.edges_inferred += plan.hazards.inferred.size();
  stats.pairs_validated += plan.hazards.validated;
  for (std::uint32_t c = 0; c < plan.size(); ++c) {
    if (detail::traits(plan.kind(c)).conditional) ++stats.conditionals;
    for (const auto& body : plan.bodies_of(c)) add_hazard_counts(*body, stats);
  }
}

}  // namespace

Executable compile(CommandBuffer& commands, Device device, const CompileOptions& options) {
  const std::shared_ptr<detail::Recording>& rec = detail::recording_of(commands);
  const detail::Recording::UseGuard guard(*rec);
  const detail::NvtxRange range("compile " + rec->name());

  ExecutableStats stats;
  const auto start = std::chrono::steady_clock::now();
  std::shared_ptr<const detail::Plan> plan = detail::build_plan(*rec, plan_options(device, options));
  stats.plan_ms = detail::ms_since(start);
  stats.commands = plan->size();
  stats.edges_recorded = plan->dag->edges.size() - plan->hazards.inferred.size();
  add_hazard_counts(*plan, stats);
  stats.edges_reduced = plan->dag->children.edges();
  stats.levels = plan->dag->level_count;
  stats.transients = plan->memory.list.size();
  stats.transient_bytes = plan->memory.arena_bytes;

  const auto lowering = std::chrono::steady_clock::now();
  auto impl = lower(std::move(plan), device, options, std::move(stats));
  impl->stats().lower_ms = detail::ms_since(lowering) - impl->stats().instantiate_ms;
  rec->seal();
  return Executable(std::move(impl));
}

}  // namespace cmdgraph
