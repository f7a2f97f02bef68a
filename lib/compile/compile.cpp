// compile(): drives the stages, record -> plan -> backend, and times each.
#include "backend/host/host_backend.hpp"
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
    return detail::lower_to_host(std::move(plan), std::move(stats));
  }
  if (options.backend == Backend::host) {
    throw Error(errc::device_mismatch, "the host backend runs on Device::host(), not on " +
                                           device.name());
  }
  throw Error(errc::unsupported, "this build of cmdgraph has no CUDA backends");
}

}  // namespace

Executable compile(CommandBuffer& commands, Device device, const CompileOptions& options) {
  const std::shared_ptr<detail::Recording>& rec = commands.recording();
  const detail::Recording::UseGuard guard(*rec);

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
