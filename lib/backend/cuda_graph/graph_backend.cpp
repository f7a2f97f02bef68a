// The CUDA graph backend's entry: which profiling a plan gets (CUPTI's records, timed events or
// none, and why), then a GraphExecutable (graph_executable.hpp).
#include "backend/cuda_graph/graph_backend.hpp"

#include "backend/cuda_graph/graph_executable.hpp"
#include "backend/cuda_commands/cuda_commands.hpp"

#include <cmdgraph/error.hpp>

#include <memory>
#include <string>
#include <utility>

namespace cmdgraph::detail {
namespace {

// A CUPTI-mode executable, or null with `why` said when CUPTI cannot trace it (not in this
// build, held by another subscriber, refusing to collect). Other errors are thrown.
std::unique_ptr<ExecutableImpl> traced_by_cupti(const std::shared_ptr<const Plan>& plan,
                                                Device device, const CompileOptions& options,
                                                ExecutableStats stats, Captures& captures,
                                                std::string& why) {
  cuda::cupti::Session* session = cuda::cupti::Session::acquire(why);
  if (!session) return nullptr;
  stats.profile_mode = ProfileMode::cupti;
  stats.profile_reason = std::string(options.profile.mode == ProfileMode::cupti
                                         ? "requested"
                                         : "CUPTI is usable") +
                         ": activity records, the GPU's own start and end of each kernel, copy "
                         "and fill";
  try {
    return std::make_unique<GraphExecutable>(plan, device, stats, CudaLowering::of(options),
                                             StartingValues::of(*plan), &captures, session);
  } catch (const cuda::cupti::Refused& e) {
    why = e.what();
    return nullptr;
  }
}

}  // namespace

std::unique_ptr<ExecutableImpl> lower_to_cuda_graph(std::shared_ptr<const Plan> plan,
                                                    Device device, const CompileOptions& options,
                                                    ExecutableStats stats, Captures captures) {
  check_runs_on_device(*plan, device.ordinal());
  if (options.device_launch) check_device_graph(*plan);
  const ProfileMode asked = options.profile.mode;
  // profile = true takes CUPTI only once something asked for it by name: starting CUPTI
  // costs every graph launch of the process host time for good, traced or not.
  const bool cupti_paid = asked == ProfileMode::automatic && cuda::cupti::Session::started();
  if (asked == ProfileMode::cupti || cupti_paid) {
    std::string why;
    if (auto traced = traced_by_cupti(plan, device, options, stats, captures, why)) {
      return traced;
    }
    if (asked == ProfileMode::cupti) {
      throw Error(errc::unsupported, "executable '" + plan->buffer_name +
                                         "' cannot be profiled through CUPTI: " + why);
    }
    stats.profile_reason = "timed events, since CUPTI is not usable: " + why;
  } else if (asked == ProfileMode::automatic) {
    stats.profile_reason =
        "timed events, since CUPTI is not started in this process: once started it costs "
        "every graph launch of the process host time until the process ends (about 0.4 us a "
        "node, traced or not); ProfileMode::cupti starts it";
  } else if (asked == ProfileMode::events) {
    stats.profile_reason = "requested";
  }
  if (asked != ProfileMode::off) stats.profile_mode = ProfileMode::events;
  StartingValues values = StartingValues::of(*plan);
  return std::make_unique<GraphExecutable>(std::move(plan), device, std::move(stats),
                                           CudaLowering::of(options), std::move(values),
                                           &captures, nullptr);
}

}  // namespace cmdgraph::detail
