// One instantiation of a built graph (Instance): what instantiate() makes of a plan, which
// the graph executable launches and replaces.
#pragma once

#include "backend/cuda_graph/graph_builder.hpp"
#include "backend/cuda_launch/cuda_executable.hpp"
#include "cuda/handles.hpp"
#include "plan/plan.hpp"

#include <memory>

namespace cmdgraph::detail {

/// One lowering: its graph, its instantiation, and the host-side objects their nodes point to.
struct Instance {
  std::shared_ptr<HostErrors> host_errors;
  BuiltGraph built;
  cuda::GraphExec exec;
  std::shared_ptr<const LaunchContext> context;
  /// The upload started at instantiation; the first launch waits for it on the device.
  cuda::Stream upload;
  cuda::Event uploaded;
};

/// How an instantiation is made: as `build` builds (its `errors` ignored: the instance makes
/// its own, or shares `errors`), traced through `tracing` (CUPTI's session, when
/// build.timing is cupti), timed into `instantiate_ms` when not null.
struct InstanceOptions {
  BuildOptions build;
  cuda::cupti::Session* tracing = nullptr;
  std::shared_ptr<HostErrors> errors;  // another instance's, to share: its launches count as ours
  double* instantiate_ms = nullptr;
  /// Lane edges to build with instead of the plan's own shaping (learned ones).
  std::shared_ptr<const GraphShaping> shaping;
};

/// Builds and instantiates `plan` with `args` as `options` say, and starts uploading it, so
/// the first launch pays no upload on the host and compile() does not wait for the device.
/// `transients` binds the transients where the graph's allocation nodes put them, rewriting
/// `args`.
Instance instantiate(const Plan& plan, ExecutableValues& args, TransientBinding& transients,
                     InstanceOptions options);

/// Why an instantiated graph's allocation nodes cannot serve `now`'s transients (one differs
/// in size from `before`'s); empty when they can.
std::string resized_transient(const Plan& before, const Plan& now);

}  // namespace cmdgraph::detail
