// GraphExecutable: build, instantiate with upload, launch, per-node and whole-graph updates.
#include "backend/cuda_graph/graph_backend.hpp"

#include "backend/cuda_launch/cuda_executable.hpp"
#include "cuda/graph_ops.hpp"
#include "cuda/stream_ops.hpp"

#include <cmdgraph/error.hpp>

#include <chrono>

namespace cmdgraph::detail {
namespace {

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
// launch pays no upload on the host and compile() does not wait for the device. `transients`
// binds the transients where the graph's allocation nodes put them, rewriting `args`.
Instance instantiate(const Plan& plan, ArgumentStore& args, TransientBinding& transients,
                     int device, bool profile, bool programmatic, Captures* captures,
                     double* instantiate_ms) {
  const cuda::ScopedDevice on(device);
  const cuda::Served served = cuda::for_executable(plan.buffer_name);
  Instance in;
  in.host_errors = std::make_shared<HostErrors>(std::max<std::uint32_t>(1, count_host_tasks(plan)));
  GraphBuilder builder(device, in.host_errors.get(), profile, captures, programmatic);
  in.built = builder.build(plan, args, transients);

  const auto start = std::chrono::steady_clock::now();
  cuda::Stream stream = cuda::create_stream(device, 0, served);
  in.exec = cuda::instantiate(in.built.graph.get(), stream.get(), in.built.node_priority, served,
                              [&](cudaGraphNode_t node) { return in.built.name_of(node); });
  in.uploaded = cuda::create_event(device, false, served);
  cuda::record_event(in.uploaded.get(), stream.get(), served);
  in.upload = std::move(stream);
  if (instantiate_ms) *instantiate_ms = ms_since(start);

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

class GraphExecutable final : public CudaExecutable {
 public:
  /// `transients`: the words of `args` pointing into transients (the plan's, or a clone's
  /// source's with its updates).
  GraphExecutable(std::shared_ptr<const Plan> plan, Device device, ExecutableStats stats,
                  ArgumentStore args, TransientBinding transients, bool profile,
                  bool programmatic, Captures* captures)
      : CudaExecutable(plan, device, std::move(stats), profile), args_(std::move(args)),
        programmatic_(programmatic) {
    transients_ = std::move(transients);
    current_ = instantiate(*plan, args_, transients_, device.ordinal(), profile, programmatic_,
                           captures, &this->stats().instantiate_ms);
    start_context(current_.context);
    this->stats().backend = Backend::cuda_graph;
    this->stats().edges_programmatic = current_.built.programmatic_edges;
    this->stats().commands_prioritised = count_prioritised(*plan);
  }
  ~GraphExecutable() override { wait_for_launches(); }

  std::unique_ptr<ExecutableImpl> clone() const override {
    // A graph of its own: its allocation nodes put its transients elsewhere.
    return std::make_unique<GraphExecutable>(shared_plan(), device(), stats(), args_, transients_,
                                             profiling(), programmatic_, nullptr);
  }

  void write_cuda_dot(const std::string& path) const override {
    cuda::write_graph_dot(current_.built.graph.get(), path);
  }

  ArgumentStore& arguments_for_update() override { return args_; }

  void apply_update(std::uint32_t c) override {
    const cuda::ScopedDevice on(ordinal());
    GraphBuilder::update_node(plan(), c, args_, ordinal(), current_.exec.get(),
                              current_.built.nodes[c]);
  }

 private:
  void enqueue(CudaQueue& queue, CudaQueue*) override {
    // CUDA itself runs launches of one graph exec one after another, whatever their streams.
    const cuda::Served served = cuda::for_executable(name());
    if (current_.uploaded) {
      cuda::wait_event(queue.stream(), current_.uploaded.get(), served);
      current_.uploaded.reset();  // CUDA keeps the event alive until the wait is satisfied
      current_.upload.reset();
    }
    cuda::launch_graph(current_.exec.get(), queue.stream(), served);
  }

  std::optional<Profile> read_last_profile() const override {
    std::lock_guard lock(mutex());
    if (launches() == 0 || !current_.built.launch_start) return std::nullopt;
    return read_profile(plan(), current_.built.launch_start.get(), current_.built.points,
                        "cuda_graph", last_started());
  }

  UpdateResult take(std::shared_ptr<const Plan> plan, const Difference& difference,
                    const UpdateOptions& options) override {
    ArgumentStore args = plan->arguments;
    if (difference) return rebuild(std::move(plan), std::move(args), difference.what);
    if (const std::string resized = resized_transient(this->plan(), *plan); !resized.empty()) {
      if (!options.reinstantiate_if_needed) refuse_update(resized);
      return rebuild(std::move(plan), std::move(args), resized);
    }
    const cuda::ScopedDevice on(ordinal());
    // The new values reach the transients where the instantiated graph has them.
    TransientBinding transients(*plan);
    for (std::uint32_t t = 0; t < plan->memory.list.size(); ++t) {
      transients.bind(t, transients_.address(t), args);
    }
    GraphBuilder builder(ordinal(), current_.host_errors.get(), profiling(), nullptr,
                         programmatic_);
    BuiltGraph fresh = builder.build(*plan, args, transients, true);
    std::string why;
    cudaGraphNode_t at = nullptr;
    const cudaError_t status = cuda::update_exec(current_.exec.get(), fresh.graph.get(), why, at);
    if (status == cudaSuccess) {
      // The exec now points at the fresh graph's host callbacks and events; per-node updates
      // keep addressing the nodes it was instantiated from, which map command for command.
      std::lock_guard lock(mutex());
      auto old = std::make_shared<BuiltGraph>();
      old->callbacks = std::exchange(current_.built.callbacks, std::move(fresh.callbacks));
      old->events = std::exchange(current_.built.events, std::move(fresh.events));
      old->launch_start = std::exchange(current_.built.launch_start, std::move(fresh.launch_start));
      current_.built.points = std::move(fresh.points);
      retire(std::move(old));
      args_ = std::move(args);
      transients_ = std::move(transients);
      replace_plan(std::move(plan));
      return {};
    }
    why = "CUDA refused the update (" + why + ")";
    if (!options.reinstantiate_if_needed) {
      const std::string command = fresh.name_of(at);
      refuse_update(why + (command.empty() ? "" : " at command '" + command + "'"),
                    command.empty() ? std::vector<std::string>{} : std::vector<std::string>{command},
                    static_cast<int>(status));
    }
    return rebuild(std::move(plan), std::move(args), why);
  }

  UpdateResult rebuild(std::shared_ptr<const Plan> plan, ArgumentStore args, std::string why) {
    TransientBinding transients(*plan);
    Instance fresh = instantiate(*plan, args, transients, ordinal(), profiling(), programmatic_,
                                 nullptr, nullptr);
    std::lock_guard lock(mutex());
    retire(std::make_shared<Instance>(std::exchange(current_, std::move(fresh))));
    start_context(current_.context);  // the fresh instance counts its own launches
    args_ = std::move(args);
    transients_ = std::move(transients);
    replace_plan(std::move(plan));
    return {true, std::move(why)};
  }

  ArgumentStore args_;
  bool programmatic_;
  Instance current_;
};

}  // namespace

std::unique_ptr<ExecutableImpl> lower_to_cuda_graph(std::shared_ptr<const Plan> plan,
                                                    Device device, const CompileOptions& options,
                                                    ExecutableStats stats, Captures captures) {
  check_runs_on_device(*plan, device.ordinal());
  ArgumentStore args = plan->arguments;
  TransientBinding transients(*plan);
  return std::make_unique<GraphExecutable>(std::move(plan), device, std::move(stats),
                                           std::move(args), std::move(transients),
                                           options.profile, options.programmatic_edges,
                                           &captures);
}

}  // namespace cmdgraph::detail
