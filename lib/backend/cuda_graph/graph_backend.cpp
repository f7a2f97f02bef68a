// GraphExecutable: build, instantiate with upload, launch, per-node and whole-graph updates.
#include "backend/cuda_graph/graph_backend.hpp"

#include "backend/cuda_common/launch_fence.hpp"
#include "backend/cuda_common/profile_reader.hpp"
#include "backend/cuda_graph/graph_builder.hpp"
#include "cuda/check.hpp"
#include "plan/compare.hpp"
#include "sync/queue_state.hpp"

#include <cmdgraph/error.hpp>

#include <chrono>
#include <mutex>

namespace cmdgraph::detail {
namespace {

const char* to_string(cudaGraphInstantiateResult r) {
  switch (r) {
    case cudaGraphInstantiateSuccess: return "success";
    case cudaGraphInstantiateError: return "error";
    case cudaGraphInstantiateInvalidStructure: return "invalid structure";
    case cudaGraphInstantiateNodeOperationNotSupported: return "node operation not supported";
    case cudaGraphInstantiateMultipleDevicesNotSupported: return "multiple devices not supported";
    default: return "unknown";
  }
}

const char* to_string(cudaGraphExecUpdateResult r) {
  switch (r) {
    case cudaGraphExecUpdateSuccess: return "success";
    case cudaGraphExecUpdateError: return "error";
    case cudaGraphExecUpdateErrorTopologyChanged: return "topology changed";
    case cudaGraphExecUpdateErrorNodeTypeChanged: return "node type changed";
    case cudaGraphExecUpdateErrorFunctionChanged: return "kernel function changed";
    case cudaGraphExecUpdateErrorParametersChanged: return "parameters changed unsupportedly";
    case cudaGraphExecUpdateErrorNotSupported: return "not supported";
    case cudaGraphExecUpdateErrorUnsupportedFunctionChange: return "unsupported function change";
    case cudaGraphExecUpdateErrorAttributesChanged: return "attributes changed";
    default: return "unknown";
  }
}

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

// One lowering: its graph, its instantiation, and the host-side objects their nodes point to.
struct Instance {
  std::shared_ptr<HostErrors> host_errors;
  BuiltGraph built;
  cuda::GraphExec exec;
  std::shared_ptr<const LaunchContext> context;
  // The upload started at instantiation; the first launch waits for it on the device.
  cuda::Stream upload;
  cuda::Event uploaded;
};

// Builds and instantiates `plan` with `args` on `device` and starts uploading it, so the first
// launch pays no upload on the host and compile() does not wait for the device.
Instance instantiate(const Plan& plan, const ArgumentStore& args, int device, bool profile,
                     double* instantiate_ms) {
  const cuda::ScopedDevice on(device);
  Instance in;
  in.host_errors = std::make_shared<HostErrors>(std::max<std::uint32_t>(1, count_host_tasks(plan)));
  cuda::Stream stream = cuda::create_stream(device, 0, cuda::for_executable(plan.recording->name()));
  GraphBuilder builder(device, in.host_errors.get(), stream.get(), profile);
  in.built = builder.build(plan, args);

  const auto start = std::chrono::steady_clock::now();
  cudaGraphInstantiateParams params{};
  params.flags = cudaGraphInstantiateFlagUpload;
  params.uploadStream = stream.get();
  cudaGraphExec_t exec = nullptr;
  const cudaError_t status = cuda::try_call(
      [&] { return cudaGraphInstantiateWithParams(&exec, in.built.graph.get(), &params); });
  if (status != cudaSuccess) {
    const std::string call =
        std::string("cudaGraphInstantiateWithParams (") + to_string(params.result_out) + ")";
    cuda::fail(status, call.c_str(), in.built.name_of(params.errNode_out));
  }
  in.exec = cuda::adopt(exec);
  in.uploaded = cuda::create_event(device, false, cuda::for_executable(plan.recording->name()));
  CMDGRAPH_CUDA(cuda::for_executable(plan.recording->name()), cudaEventRecord, in.uploaded.get(), stream.get());
  in.upload = std::move(stream);
  if (instantiate_ms) *instantiate_ms = ms_since(start);

  auto context = std::make_shared<LaunchContext>();
  context->executable = plan.recording->name();
  context->device = device;
  context->suspects = device_code_commands(plan);
  context->host_errors = in.host_errors;
  context->events = std::make_shared<EventPool>(device);
  in.context = std::move(context);
  return in;
}

class GraphExecutable final : public ExecutableImpl {
 public:
  GraphExecutable(std::shared_ptr<const Plan> plan, Device device, ExecutableStats stats,
                  ArgumentStore args, bool profile)
      : ExecutableImpl(plan, device, std::move(stats)), args_(std::move(args)), profile_(profile) {
    current_ = instantiate(*plan, args_, device.ordinal(), profile_, &this->stats().instantiate_ms);
    this->stats().backend = Backend::cuda_graph;
  }

  ~GraphExecutable() override {
    // Host nodes of a launch in flight point into this object: let it finish first.
    if (auto queue = last_queue_.lock()) queue->synchronize_quietly();
  }

  Fence launch(const std::shared_ptr<QueueState>& queue, const SubmitInfo& info) override {
    const cuda::ScopedDevice on(device().ordinal());
    std::lock_guard lock(mutex_);
    QueueState::Submission submission(*queue);
    cudaStream_t stream = queue->stream();
    queue->enqueue_semaphore_waits(info);
    if (current_.uploaded) {
      CMDGRAPH_CUDA(cuda::for_executable(name()), cudaStreamWaitEvent, stream, current_.uploaded.get(), 0u);
      current_.uploaded.reset();  // CUDA keeps the event alive until the wait is satisfied
      current_.upload.reset();
    }
    CMDGRAPH_CUDA(cuda::for_executable(name()), cudaGraphLaunch, current_.exec.get(), stream);
    if (profile_) last_started_ = std::chrono::steady_clock::now();
    queue->enqueue_semaphore_signals(info);
    const std::uint64_t launch = launches_++;
    std::shared_ptr<FenceState> fence = launch_fence(current_.context, launch, queue);
    submission.commit(fence, current_.context, launch);
    last_queue_ = queue;
    retirement_.release_finished();
    return Fence(std::move(fence));
  }

  std::unique_ptr<ExecutableImpl> clone() const override {
    return std::make_unique<GraphExecutable>(shared_plan(), device(), stats(), args_, profile_);
  }

  Profile last_profile() const override {
    if (!profile_) return ExecutableImpl::last_profile();
    std::lock_guard lock(mutex_);
    if (launches_ == 0 || !current_.built.launch_start) {
      throw Error(errc::wrong_state, "executable '" + name() + "' has not been launched yet");
    }
    return read_profile(*this, current_.built.launch_start.get(), current_.built.points,
                        "cuda_graph", last_started_);
  }

  void write_cuda_dot(const std::string& path) const override {
    CMDGRAPH_CUDA(cuda::no_command, cudaGraphDebugDotPrint, current_.built.graph.get(),
                  path.c_str(), static_cast<unsigned>(cudaGraphDebugDotFlagsVerbose));
  }

  ArgumentStore& arguments_for_update() override { return args_; }

  void apply_update(std::uint32_t c) override {
    const cuda::ScopedDevice on(device().ordinal());
    const RecordedCommand& cmd = plan().command(c);
    const std::string name = plan().name(c);
    cudaGraphNode_t node = current_.built.nodes[c];
    cudaGraphExec_t exec = current_.exec.get();
    switch (cmd.kind) {
      case CommandKind::kernel:
      case CommandKind::parallel_for: {
        KernelLaunch launch = kernel_launch(plan(), c, args_, device().ordinal());
        const cudaKernelNodeParams p = kernel_node_params(launch);
        CMDGRAPH_CUDA(name, cudaGraphExecKernelNodeSetParams, exec, node, &p);
        break;
      }
      case CommandKind::copy: {
        const auto& cp = args_.get<CopySpec>(std::get<CopyPayload>(cmd.payload).spec);
        CMDGRAPH_CUDA(name, cudaGraphExecMemcpyNodeSetParams1D, exec, node, cp.dst.data,
                      cp.src.data, cp.dst.bytes, cudaMemcpyDefault);
        break;
      }
      case CommandKind::fill: {
        const cudaMemsetParams p =
            memset_node_params(args_.get<FillSpec>(std::get<FillPayload>(cmd.payload).spec));
        CMDGRAPH_CUDA(name, cudaGraphExecMemsetNodeSetParams, exec, node, &p);
        break;
      }
      default: break;
    }
  }

  void check_memory(std::uint32_t c, const MemoryRange& r) const override {
    check_device_memory(plan(), c, r, device().ordinal());
  }

  UpdateResult update_from(std::shared_ptr<const Plan> plan,
                           const UpdateOptions& options) override {
    const int device = this->device().ordinal();
    ArgumentStore args = plan->recording->arguments();
    check_runs_on_device(*plan, args, device);
    const Difference difference = structural_difference(this->plan(), *plan);
    if (difference && !options.reinstantiate_if_needed) {
      throw Error(errc::update_refused, "executable '" + name() +
                                            "' cannot take the update in place: " + difference.what,
                  {difference.command});
    }
    if (!difference) {
      const cuda::ScopedDevice on(device);
      cuda::Stream stream;
      if (find_command(*plan, CommandKind::capture)) stream = cuda::create_stream(device, 0, cuda::for_executable(plan->recording->name()));
      GraphBuilder builder(device, current_.host_errors.get(), stream.get(), profile_);
      BuiltGraph fresh = builder.build(*plan, args);
      cudaGraphExecUpdateResultInfo info{};
      const cudaError_t status = cuda::try_call(
          [&] { return cudaGraphExecUpdate(current_.exec.get(), fresh.graph.get(), &info); });
      if (status == cudaSuccess) {
        // The exec now points at the fresh graph's host callbacks; per-node updates keep
        // addressing the nodes it was instantiated from, which map command for command.
        std::lock_guard lock(mutex_);
        // The fresh graph's events are the ones the exec records now.
        auto old = std::make_shared<BuiltGraph>();
        old->callbacks = std::exchange(current_.built.callbacks, std::move(fresh.callbacks));
        old->events = std::exchange(current_.built.events, std::move(fresh.events));
        old->launch_start = std::exchange(current_.built.launch_start, std::move(fresh.launch_start));
        current_.built.points = std::move(fresh.points);
        retirement_.retire(std::move(old), last_queue_.lock(), device);
        args_ = std::move(args);
        replace_plan(std::move(plan));
        return {};
      }
      cuda::clear_error();
      const std::string why = std::string("CUDA refused the update (") + to_string(info.result) + ")";
      if (!options.reinstantiate_if_needed) {
        const std::string at = fresh.name_of(info.errorNode);
        throw Error(errc::update_refused, "executable '" + name() + "': " + why +
                                              (at.empty() ? "" : " at command '" + at + "'"),
                    at.empty() ? std::vector<std::string>{} : std::vector<std::string>{at},
                    static_cast<int>(status));
      }
      return rebuild(std::move(plan), std::move(args), why);
    }
    return rebuild(std::move(plan), std::move(args), difference.what);
  }

 private:
  UpdateResult rebuild(std::shared_ptr<const Plan> plan, ArgumentStore args, std::string why) {
    Instance fresh = instantiate(*plan, args, device().ordinal(), profile_, nullptr);
    std::lock_guard lock(mutex_);
    retirement_.retire(std::make_shared<Instance>(std::exchange(current_, std::move(fresh))),
                       last_queue_.lock(), device().ordinal());
    launches_ = 0;  // the fresh instance counts its own launches for host-task errors
    args_ = std::move(args);
    replace_plan(std::move(plan));
    return {true, std::move(why)};
  }

  ArgumentStore args_;
  bool profile_;
  Instance current_;
  mutable std::mutex mutex_;
  std::chrono::steady_clock::time_point last_started_;
  std::uint64_t launches_ = 0;
  std::weak_ptr<QueueState> last_queue_;
  Retirement retirement_;
};

}  // namespace

std::unique_ptr<ExecutableImpl> lower_to_cuda_graph(std::shared_ptr<const Plan> plan,
                                                    Device device, const CompileOptions& options,
                                                    ExecutableStats stats) {
  ArgumentStore args = plan->recording->arguments();
  check_runs_on_device(*plan, args, device.ordinal());
  return std::make_unique<GraphExecutable>(std::move(plan), device, std::move(stats),
                                           std::move(args), options.profile);
}

}  // namespace cmdgraph::detail
