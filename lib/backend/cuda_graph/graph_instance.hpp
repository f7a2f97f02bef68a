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

/// Builds and instantiates `plan` with `args` on `device`, profiled as `timing` says, and starts
/// uploading it, so the first launch pays no upload on the host and compile() does not wait for
/// the device. `tracing`: CUPTI's session when `timing` is cupti (else null). `transients`
/// binds the transients where the graph's allocation nodes put them, rewriting `args`.
/// `programmatic`: lower programmatic edges as such; `shape`: the lane edges to add. `errors`:
/// another instance's host errors to share (its launches count as ours).
Instance instantiate(const Plan& plan, ArgumentStore& args, TransientBinding& transients,
                     int device, ProfileMode timing, cuda::cupti::Session* tracing,
                     bool programmatic, GraphShape shape,
                     Captures* captures, double* instantiate_ms,
                     std::shared_ptr<HostErrors> errors = nullptr);

/// Why an instantiated graph's allocation nodes cannot serve `now`'s transients (one differs
/// in size from `before`'s); empty when they can.
std::string resized_transient(const Plan& before, const Plan& now);

}  // namespace cmdgraph::detail
