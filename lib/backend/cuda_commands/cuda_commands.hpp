// What each kind of command is on a CUDA device: whether it can run there, its graph node, and
// its stream operation, side by side in cuda_commands.cpp so the two forms agree. One overload
// per kind and form there, reached through std::visit: a kind without one does not compile.
// The graph and streams backends are engines over these forms; they know no kinds.
#pragma once

#include "backend/cuda_commands/host_callbacks.hpp"
#include "cuda/check.hpp"
#include "cuda/dispatch.hpp"
#include "cuda/graph_ops.hpp"
#include "cuda/stream_ops.hpp"
#include "plan/plan.hpp"

#include <cuda_runtime_api.h>

#include <optional>
#include <span>
#include <string>
#include <vector>

namespace cmdgraph::detail {

/// Throws, naming the first command of `plan` (bodies included) that cannot run on CUDA
/// device `device`: a parallel_for without a device version, a recorded event of another
/// device (waiting for one is fine), memory of another device outside a copy, what the body of
/// a conditional command cannot hold. Opens peer access for copies that reach another device.
void check_runs_on_device(const Plan& plan, int device);
/// As check_runs_on_device for commands `commands` of `plan` alone (`root` or a body of it),
/// whose values are new in a plan of a structure that passed it.
void check_values_on_device(const Plan& plan, std::span<const std::uint32_t> commands,
                            const Plan& root, int device);
/// Throws unless memory `r` can be reached by root command `c` on CUDA device `device`.
void check_device_memory(const Plan& plan, std::uint32_t c, const MemoryRange& r, int device);

/// A kernel or parallel_for ready to launch, its parameters pointing into an ArgumentStore.
struct KernelLaunch {
  const void* function = nullptr;
  dim3 grid, block;
  unsigned shared_bytes = 0;
  std::vector<void*> params;
};
/// The CUDA priority the kernels of `command` run at on `device`: its own priority(), else
/// `inherited` (that of the command whose body holds it); nullopt when neither has one.
std::optional<int> kernel_priority(const CommandRecord& command, int device,
                                   std::optional<int> inherited);

/// The launch of a command that runs one kernel (kernel, parallel_for) with the values in
/// `args`; nullopt for other kinds.
std::optional<KernelLaunch> kernel_launch(const Payload& payload, const ArgumentStore& args,
                                          int device);

/// How an indirect command's dispatcher sizes its kernel node, as `form` says: from the grid
/// at `source` clamped to `limit`, from the count at `source` as `count` says, or enabled by
/// the flag at `source`.
struct IndirectDispatch {
  const void* source;
  IndirectForm form;
  dim3 limit;
  cuda::CountDispatch count;
};

/// Where a command's graph node goes: what its graph form may use. The graph builder makes it.
class GraphSite {
 public:
  virtual ~GraphSite() = default;
  virtual const ArgumentStore& args() const = 0;
  virtual int device() const = 0;
  /// How errors name the command.
  virtual cuda::Served served() const = 0;
  /// The node doing `spec` (added after the command's parents, or its parameters set in an
  /// instantiated graph when updating).
  virtual cudaGraphNode_t place(cuda::NodeSpec& spec) = 0;
  /// The userData of a host node running `task`.
  virtual void* host_callback(const std::shared_ptr<HostTask>& task) = 0;
  /// A child graph node running the command's body; a node for the graph a capture made.
  virtual cudaGraphNode_t body_graph() = 0;
  virtual cudaGraphNode_t captured_graph(const CapturePayload& capture) = 0;
  /// A child graph node for what stream capture makes of the command's collective (captured
  /// here; in an update, set in place of the node's graph).
  virtual cudaGraphNode_t collective_graph(const CollectivePayload& collective) = 0;
  /// A conditional node of `type` over the command's bodies (one body graph each), its handle
  /// set by `condition`'s kernel before the node (and, for WHILE, again at the end of every
  /// pass).
  virtual cudaGraphNode_t conditional(cudaGraphConditionalNodeType type,
                                      const Condition& condition) = 0;
  /// The command's kernel `work`, sized as it runs: a device-updatable node after a
  /// one-thread dispatcher kernel (after the command's parents) that sets its grid as
  /// `dispatch` says, reporting to the command's DispatchReport.
  virtual cudaGraphNode_t indirect(cuda::NodeSpec& work, const IndirectDispatch& dispatch) = 0;
  /// The command's memory allocation node returned `address`: later nodes reach its transient
  /// there.
  virtual void allocated(void* address) = 0;
  /// The address of the transient the command frees, as its allocation node returned it.
  virtual void* to_free() const = 0;
};
/// Lowers `payload` to its graph node at `site`.
cudaGraphNode_t add_graph_node(const Payload& payload, GraphSite& site);

/// What a command's stream form uses, prepared once per lowering.
struct StreamSite {
  cudaStream_t stream;
  const ArgumentStore& args;
  const KernelLaunch* kernel;  // for kinds that run one kernel
  HostCallback* callback;      // for host tasks
  cudaGraphExec_t graph;       // for conditional commands: their own instantiated graph
  cuda::Served served;
  cuda::LaunchAttributes launch = {};  // for kinds that run one kernel
};
/// Launches the prepared kernel `k` on `stream` with `launch`'s attributes.
void launch_on_stream(const KernelLaunch& k, cudaStream_t stream,
                      const cuda::LaunchAttributes& launch, cuda::Served served);
/// Enqueues `payload` on `site.stream`.
void enqueue_on_stream(const Payload& payload, const StreamSite& site);

}  // namespace cmdgraph::detail
