// GraphExecutable: build, instantiate with upload, launch, per-node and whole-graph updates,
// and the two ways it is profiled: event nodes in the graph, or CUPTI's activity records.
#include "backend/cuda_graph/graph_backend.hpp"

#include "backend/cuda_graph/graph_instance.hpp"
#include "backend/cuda_rules.hpp"
#include "backend/cuda_launch/cuda_executable.hpp"
#include "command/transient_range.hpp"
#include "cuda/graph_ops.hpp"
#include "cuda/stream_ops.hpp"

#include <cmdgraph/error.hpp>

#include <chrono>
#include <optional>
#include <memory>
#include <utility>
#include <vector>

namespace cmdgraph::detail {
namespace {

// Throws naming the first command of `plan` a graph launched from the device cannot hold.
void check_device_graph(const Plan& plan) {
  if (const auto breach = device_graph_breach(plan)) {
    throw Error(errc::unsupported, "command '" + breach->command + "': " + breach->why,
                {breach->command});
  }
}

class GraphExecutable final : public CudaExecutable {
 public:
  // `captures`: what capture_all made of the plan's capture commands (null for a clone, whose
  // captures run again). `session`: CUPTI's, when stats.profile_mode is cupti.
  GraphExecutable(std::shared_ptr<const Plan> plan, Device device, ExecutableStats stats,
                  const CudaLowering& lowering, StartingValues values, Captures* captures,
                  cuda::cupti::Session* session)
      : CudaExecutable(plan, device, std::move(stats), lowering), args_(std::move(values.args)),
        session_(session) {
    transients_ = std::move(values.transients);
    const int ordinal = device.ordinal();
    const cuda::Served served = cuda::for_executable(plan->buffer_name);
    if (mode() == ProfileMode::cupti) sampled_done_ = cuda::create_event(ordinal, false, served);
    if (split() && !plan->memory.list.empty()) {
      // Two instantiations would each place the transients: one set of arguments cannot
      // point at both.
      throw Error(errc::unsupported,
                  "executable '" + plan->buffer_name + "' allocates transient memory, which "
                  "timed-event profiling of one launch in N cannot hold; profile every launch, "
                  "or through CUPTI");
    }
    reports_ = pinned_reports(*plan);
    arguments_ = device_arguments(*plan, args_.read());
    InstanceOptions options = instance_options(mode(), captures);
    options.instantiate_ms = &this->stats().instantiate_ms;
    current_ = instantiate(*plan, args_, transients_, options);
    if (split()) {
      plain_ = std::make_unique<Instance>(instantiate(*plan, args_, transients_,
                                                      plain_options(current_, captures)));
      switched_ = cuda::create_event(ordinal, false, served);
    }
    start_context(current_.context);
    this->stats().backend = Backend::cuda_graph;
    this->stats().edges_programmatic = current_.built.programmatic_edges;
    note_shaping(current_.built.shaping.get());
  }
  ~GraphExecutable() override { wait_for_launches(); }

  std::unique_ptr<ExecutableImpl> clone() const override {
    // A graph of its own: its allocation nodes put its transients elsewhere.
    return std::make_unique<GraphExecutable>(shared_plan(), device(), stats_for_clone(),
                                             lowering(), StartingValues{args_, transients_},
                                             nullptr, session_);
  }

  void write_cuda_dot(const std::string& path) const override {
    cuda::write_graph_dot(current_.built.graph.get(), path);
  }

  ArgumentStore& arguments_for_update() override { return args_.writable(); }
  const ArgumentStore& current_values() const override { return args_.read(); }

  void apply_update(std::uint32_t c) override {
    if (arguments_ && arguments_->stage(c, args_.read())) return;  // the next launch hands it
    const cuda::ScopedDevice on(ordinal());
    for (Instance* in : instances()) {
      cuda::Graph captured = GraphBuilder::update_node(plan(), c, args_.read(), ordinal(),
                                                       in->exec.get(), in->built.nodes[c]);
      if (captured) keep_recaptured(*in, c, std::move(captured));
    }
    uploaded_for_device_ = false;
  }

  bool write_arguments(std::uint32_t c, const KernelArguments& arguments) override {
    // Values reaching transient memory are checked and rebound on update()'s path.
    if (!arguments_ || !arguments_->holds(c) || any_live_transients()) return false;
    arguments_->write(c, args_.writable(), arguments);
    return true;
  }

  void* device_graph(const std::shared_ptr<QueueState>& queue) override {
    if (!lowering().device_launch) return ExecutableImpl::device_graph(queue);
    const cuda::ScopedDevice on(ordinal());
    const cuda::Served served = cuda::for_executable(name());
    const cudaStream_t stream = queue->as_cuda()->stream();
    std::lock_guard lock(mutex());
    follow_queue(queue);
    if (current_.uploaded) {
      // The upload compile() started; kept for the first launch from the host to wait for.
      cuda::wait_event(stream, current_.uploaded.get(), served);
    }
    if (!uploaded_for_device_) {
      cuda::upload_graph(current_.exec.get(), stream, served);
      uploaded_for_device_ = true;
    }
    return current_.exec.get();
  }

 protected:
  void check_runs(const Plan& plan) const override {
    CudaExecutable::check_runs(plan);
    if (lowering().device_launch) check_device_graph(plan);
  }

 private:
  ProfileMode mode() const noexcept { return stats().profile_mode; }
  // Event mode profiling one launch in N: the others launch a graph without event nodes.
  bool split() const noexcept { return mode() == ProfileMode::events && profile_every() > 1; }
  std::vector<Instance*> instances() {
    if (plain_) return {&current_, plain_.get()};
    return {&current_};
  }
  // How the instance launches are timed in (`timing`) is made.
  InstanceOptions instance_options(ProfileMode timing, Captures* captures) const {
    InstanceOptions options;
    options.build = {ordinal(), nullptr, timing, captures, lowering().programmatic, reports_};
    if (timing == ProfileMode::cupti) options.tracing = session_;
    options.device_launch = lowering().device_launch;
    options.build.arguments = arguments_.get();
    return options;
  }
  // The update-free kernels of `plan` with `values`, where their nodes take their arguments on
  // the device: null when it has none, when profiled (the applier is no command of the
  // profile) and when launched from the device (the host hands values over as it launches).
  std::shared_ptr<DeviceArguments> device_arguments(const Plan& plan,
                                                    const ArgumentStore& values) {
    std::shared_ptr<DeviceArguments> arguments;
    if (mode() == ProfileMode::off && !lowering().device_launch) {
      arguments = std::make_shared<DeviceArguments>(plan, values);
      if (arguments->empty()) arguments.reset();
    }
    this->stats().commands_update_free = arguments ? arguments->size() : 0;
    return arguments;
  }
  // Hands the arguments updates staged to the device: the applier reads them in this launch.
  void hand_over_arguments(const cuda::Served& served) {
    ApplierNode applier(arguments_->publish(args_.read()), current_.built.applier_table,
                        arguments_->seen());
    try {
      cuda::set_node(current_.exec.get(), current_.built.applier, applier.spec(), served);
    } catch (...) {
      arguments_->withdraw();
      throw;
    }
  }
  // How the instance of the launches not profiled is made, beside `profiled`.
  InstanceOptions plain_options(const Instance& profiled, Captures* captures) const {
    InstanceOptions options = instance_options(ProfileMode::off, captures);
    options.errors = profiled.host_errors;
    return options;
  }

  // A collective of `in` captured again by an update: launches in flight may still run what
  // the graph captured before holds, and its communicator outlives it (the pair's graph is
  // destroyed first).
  void keep_recaptured(Instance& in, std::uint32_t c, cuda::Graph captured) {
    cuda::Graph& kept = in.built.collectives[{lowered_plan().get(), c}];
    auto old = std::make_shared<std::pair<std::shared_ptr<CommunicatorState>, cuda::Graph>>(
        communicator(plan().payload(c)), std::exchange(kept, std::move(captured)));
    try {
      retire(old);
    } catch (const Error&) {
      // The node already runs the new graph: the update stands, and the old graph stays with
      // the executable instead of the queue.
      unretired_.push_back(std::move(old));
    }
  }

  void enqueue(CudaQueue& queue, CudaQueue* previous) override {
    const cuda::Served served = cuda::for_executable(name());
    const bool profiled = current_launch().profiled;
    Instance& in = plain_ && !profiled ? *plain_ : current_;
    if (arguments_ && arguments_->pending()) hand_over_arguments(served);
    if (plain_ && previous) {
      // CUDA orders the launches of one graph exec, not of two: follow the previous queue.
      cuda::record_event(switched_.get(), previous->stream(), served);
      cuda::wait_event(queue.stream(), switched_.get(), served);
    }
    if (in.uploaded) {
      cuda::wait_event(queue.stream(), in.uploaded.get(), served);
      in.uploaded.reset();  // CUDA keeps the event alive until the wait is satisfied
      in.upload.reset();
    }
    if (mode() == ProfileMode::cupti && profiled) {
      enqueue_traced(queue, served);
    } else {
      cuda::launch_graph(in.exec.get(), queue.stream(), served);
    }
  }

  // A launch CUPTI traces: its host tasks time themselves, its graph launch's records are
  // routed to it, and an event marks its end for the reader. Collection is on only while its
  // cudaGraphLaunch is made, even when every launch is traced: CUPTI collects process-wide,
  // and left on it traced every other launch of the process too, event-profiled ones
  // included (a 100 us kernel measured 500-1,100 us by events beside a CUPTI executable, run
  // 49). CUPTI decides what a launch records as it is enqueued: records of a launch still
  // arrive after the window closed (the sampled launches of run 49 all had theirs).
  void enqueue_traced(CudaQueue& queue, const cuda::Served& served) {
    auto launch = std::make_shared<CuptiLaunch>();
    launch->index = current_launch().index;
    launch->host_launch = launches();
    launch->timing = current_.built.cupti;
    launch->started = std::chrono::steady_clock::now();
    current_.built.cupti->host_launch.store(launch->host_launch, std::memory_order_release);
    {
      const cuda::cupti::Session::Window window(*session_, launch->records,
                                                launch->timing->work);
      cuda::launch_graph(current_.exec.get(), queue.stream(), served);
    }
    cuda::record_event(sampled_done_.get(), queue.stream(), served);
    launch->enqueued = std::chrono::steady_clock::now();
    last_traced_ = std::move(launch);
  }

  std::optional<Profile> read_last_profile() const override {
    std::lock_guard lock(mutex());
    if (!last_profiled()) return std::nullopt;
    if (mode() == ProfileMode::cupti) {
      if (const cudaError_t s = cuda::synchronize_event(sampled_done_.get()); s != cudaSuccess) {
        cuda::fail(s, "cudaEventSynchronize", cuda::for_executable(name()));
      }
      return read_cupti_profile(plan(), *last_traced_, *session_, "cuda_graph");
    }
    if (!current_.built.launch_start) return std::nullopt;
    Profile p = read_profile(plan(), current_.built.launch_start.get(), current_.built.points,
                             "cuda_graph", last_started());
    p.launch = last_profiled()->index;
    return p;
  }

  std::vector<ClampedDispatch> clamped_dispatches() const override {
    std::lock_guard lock(mutex());
    return reports_ ? reports_->clamped() : std::vector<ClampedDispatch>{};
  }

  UpdateResult take(std::shared_ptr<const Plan> plan, const Difference& difference,
                    const UpdateOptions& options) override {
    ExecutableValues args(plan->values);
    if (difference) return rebuild(std::move(plan), std::move(args), difference.what);
    if (reports_ || arguments_) {
      const std::string why =
          "CUDA updates no graph with device-updatable kernel nodes (the indirect and "
          "update-free commands') as a whole";
      if (!options.reinstantiate_if_needed) refuse_update(why);
      return rebuild(std::move(plan), std::move(args), why);
    }
    if (!plan->memory.list.empty()) {
      // Every graph built places its memory nodes' allocations anew, and a node may not reach
      // another graph's (the H200 refused the memset of a re-recorded pipeline, run 47).
      std::string why = resized_transient(this->plan(), *plan);
      if (why.empty()) why = "CUDA places a graph's transient memory anew in every graph built";
      if (!options.reinstantiate_if_needed) refuse_update(why);
      return rebuild(std::move(plan), std::move(args), why);
    }
    const cuda::ScopedDevice on(ordinal());
    TransientBinding transients;  // none: a plan with transients was rebuilt above
    std::vector<BuiltGraph> fresh;
    if (auto why = update_instances(*plan, args, transients, options, fresh)) {
      return rebuild(std::move(plan), std::move(args), std::move(*why));
    }
    take_built(fresh);
    args_ = std::move(args);
    transients_ = std::move(transients);
    replace_plan_after_launches(std::move(plan));
    uploaded_for_device_ = false;
    return {};
  }

  // Builds `plan` anew for every instance and has CUDA update the instance from it; why CUDA
  // refused when a rebuild may follow (else it throws the refusal).
  std::optional<std::string> update_instances(const Plan& plan, ExecutableValues& args,
                                              TransientBinding& transients,
                                              const UpdateOptions& options,
                                              std::vector<BuiltGraph>& fresh) {
    for (Instance* in : instances()) {
      GraphBuilder builder({ordinal(), current_.host_errors.get(),
                            in == &current_ ? mode() : ProfileMode::off, nullptr,
                            lowering().programmatic, reports_});
      // The plan has the executable's structure, so its lane edges still hold every edge;
      // costs given since would shape it otherwise, and CUDA updates no edge.
      fresh.push_back(builder.build(plan, args, transients, true, in->built.shaping));
      std::string why;
      cudaGraphNode_t at = nullptr;
      const cudaError_t status =
          cuda::update_exec(in->exec.get(), fresh.back().graph.get(), why, at);
      if (status == cudaSuccess) continue;
      why = "CUDA refused the update (" + why + ")";
      if (!options.reinstantiate_if_needed) {
        const std::string command = fresh.back().name_of(at);
        std::vector<std::string> named;
        if (!command.empty()) named.push_back(command);
        refuse_update(why + (command.empty() ? "" : " at command '" + command + "'"),
                      std::move(named), static_cast<int>(status));
      }
      return why;
    }
    return std::nullopt;
  }

  // The execs now point at the fresh graphs' host callbacks and events; per-node updates
  // keep addressing the nodes they were instantiated from, which map command for command,
  // as do the clones CUPTI's records name.
  void take_built(std::vector<BuiltGraph>& fresh) {
    std::lock_guard lock(mutex());
    std::size_t i = 0;
    for (Instance* in : instances()) {
      BuiltGraph& now = fresh[i++];
      auto old = std::make_shared<BuiltGraph>();
      old->callbacks = std::exchange(in->built.callbacks, std::move(now.callbacks));
      old->events = std::exchange(in->built.events, std::move(now.events));
      old->launch_start = std::exchange(in->built.launch_start, std::move(now.launch_start));
      old->marker_memory = std::exchange(in->built.marker_memory, std::move(now.marker_memory));
      in->built.points = std::move(now.points);
      if (now.cupti) {
        now.cupti->map = in->built.cupti->map;
        in->built.cupti = std::move(now.cupti);
      }
      old->collectives = std::exchange(in->built.collectives, std::move(now.collectives));
      // The graph instantiated first stays, with what it captured: its communicators stay too.
      old->communicators = in->built.communicators;
      for (const auto& comm : now.communicators) in->built.keep(comm);
      retire(std::move(old));
    }
  }

  UpdateResult rebuild(std::shared_ptr<const Plan> plan, ExecutableValues args,
                       std::string why) {
    // Reports of their own for the fresh instances: launches in flight write the old ones,
    // which their graphs keep.
    std::shared_ptr<DispatchReports> before = std::exchange(reports_, pinned_reports(*plan));
    std::shared_ptr<DeviceArguments> arguments_before =
        std::exchange(arguments_, device_arguments(*plan, args.read()));
    TransientBinding transients(*plan);
    std::optional<Instance> fresh;
    std::unique_ptr<Instance> fresh_plain;
    try {
      fresh.emplace(instantiate(*plan, args, transients, instance_options(mode(), nullptr)));
      if (split()) {
        fresh_plain = std::make_unique<Instance>(
            instantiate(*plan, args, transients, plain_options(*fresh, nullptr)));
      }
    } catch (...) {
      reports_ = std::move(before);
      arguments_ = std::move(arguments_before);
      this->stats().commands_update_free = arguments_ ? arguments_->size() : 0;
      throw;
    }
    std::lock_guard lock(mutex());
    retire(std::make_shared<Instance>(std::exchange(current_, std::move(*fresh))));
    if (arguments_before) retire(std::move(arguments_before));  // launches in flight read it
    if (plain_) retire(std::shared_ptr<Instance>(std::exchange(plain_, std::move(fresh_plain))));
    start_context(current_.context);  // the fresh instance counts its own launches
    note_shaping(current_.built.shaping.get());
    uploaded_for_device_ = true;
    args_ = std::move(args);
    transients_ = std::move(transients);
    replace_plan_after_launches(std::move(plan));
    return {true, std::move(why)};
  }

  // What shaping did to the graph instantiated, in the stats (null: the plan was not shaped).
  void note_shaping(const GraphShaping* shaped) {
    static const GraphShaping unshaped;
    const GraphShaping& shaping = shaped ? *shaped : unshaped;
    ExecutableStats& s = this->stats();
    s.shape_lanes = shaping.lanes;
    s.edges_shape_added = shaping.edges_added;
    s.edges_shape_dropped = shaping.edges_dropped;
    s.shape_reason = shaping.reason;
  }

  ExecutableValues args_;
  // Where the instances' indirect commands report (null without any).
  std::shared_ptr<DispatchReports> reports_;
  // The update-free kernels' arguments on their way to the device (null without any).
  std::shared_ptr<DeviceArguments> arguments_;
  Instance current_;
  std::unique_ptr<Instance> plain_;  // event mode, one launch in N: the launches not profiled
  cuda::Event switched_;             // orders launches of the two across queues
  // CUPTI mode.
  cuda::cupti::Session* session_;
  cuda::Event sampled_done_;                 // recorded after each traced launch
  std::shared_ptr<CuptiLaunch> last_traced_;
  std::vector<std::shared_ptr<const void>> unretired_;  // what a failed retire() left here
  // Device launch: current_'s upload holds every update made to it (false after an update in
  // place; a rebuilt instance is uploaded as it is instantiated).
  bool uploaded_for_device_ = true;
};

}  // namespace

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
