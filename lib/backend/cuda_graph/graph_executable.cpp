// GraphExecutable: built and instantiated with its upload started, launched, profiled.
#include "backend/cuda_graph/graph_executable.hpp"

#include "backend/cuda_rules.hpp"
#include "cuda/graph_ops.hpp"
#include "cuda/stream_ops.hpp"

#include <cmdgraph/error.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

namespace cmdgraph::detail {

void check_device_graph(const Plan& plan) {
  if (const auto breach = device_graph_breach(plan)) {
    throw Error(errc::unsupported, "command '" + breach->command + "': " + breach->why,
                {breach->command});
  }
}

GraphExecutable::GraphExecutable(std::shared_ptr<const Plan> plan, Device device,
                                 ExecutableStats stats, const CudaLowering& lowering,
                                 StartingValues values, Captures* captures,
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
  start_learning();
}

std::unique_ptr<ExecutableImpl> GraphExecutable::clone() const {
  // A graph of its own: its allocation nodes put its transients elsewhere.
  return std::make_unique<GraphExecutable>(shared_plan(), device(), stats_for_clone(),
                                           lowering(), StartingValues{args_, transients_},
                                           nullptr, session_);
}

void GraphExecutable::write_cuda_dot(const std::string& path) const {
  cuda::write_graph_dot(current_.built.graph.get(), path);
}

void* GraphExecutable::device_graph(const std::shared_ptr<QueueState>& queue) {
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

void GraphExecutable::check_runs(const Plan& plan) const {
  CudaExecutable::check_runs(plan);
  if (lowering().device_launch) check_device_graph(plan);
}

std::vector<Instance*> GraphExecutable::instances() {
  if (plain_) return {&current_, plain_.get()};
  return {&current_};
}

InstanceOptions GraphExecutable::instance_options(ProfileMode timing, Captures* captures) const {
  InstanceOptions options;
  options.build = {ordinal(), nullptr, timing, captures, lowering().programmatic, reports_};
  if (timing == ProfileMode::cupti) options.tracing = session_;
  options.build.device_launch = lowering().device_launch;
  options.build.arguments = arguments_.get();
  return options;
}

InstanceOptions GraphExecutable::plain_options(const Instance& profiled,
                                               Captures* captures) const {
  InstanceOptions options = instance_options(ProfileMode::off, captures);
  options.errors = profiled.host_errors;
  return options;
}

void GraphExecutable::enqueue(CudaQueue& queue, CudaQueue* previous) {
  const cuda::Served served = cuda::for_executable(name());
  const bool profiled = current_launch().profiled;
  if (switched_ && previous) {
    // CUDA orders the launches of one graph exec, not of two: follow the previous queue (so
    // that what this queue runs next, learning's included, follows every launch before).
    cuda::record_event(switched_.get(), previous->stream(), served);
    cuda::wait_event(queue.stream(), switched_.get(), served);
  }
  const ShapeLearning::Turn turn =
      learning_ ? learning_turn(queue.stream()) : ShapeLearning::Turn{};
  Instance& in = turn.instead ? *turn.instead : plain_ && !profiled ? *plain_ : current_;
  if (arguments_ && arguments_->pending()) hand_over_arguments(served);
  if (in.uploaded) {
    cuda::wait_event(queue.stream(), in.uploaded.get(), served);
    in.uploaded.reset();  // CUDA keeps the event alive until the wait is satisfied
    in.upload.reset();
  }
  if (turn.timed) learning_->began(queue.stream(), ordinal());
  if (mode() == ProfileMode::cupti && profiled) {
    enqueue_traced(queue, served);
  } else {
    cuda::launch_graph(in.exec.get(), queue.stream(), served);
  }
  if (turn.timed) {
    learning_->ended(queue.stream());
    stats().shape_timed_launches = learning_->timed_launches();
  }
  if (learning_ && learning_->done() && learning_->idle()) learning_.reset();
}

void GraphExecutable::start_learning() {
  if (learning_) retire_all(learning_->release());
  learning_.reset();
  stats().shape_timed_launches = 0;
  stats().shape_learned_at_launch = 0;
  const GraphShaping* shaping = current_.built.shaping.get();
  if (!shaping) return;
  const std::string refused = learning_refused(plan(), *shaping, mode() != ProfileMode::off,
                                               reports_ || arguments_, lowering().device_launch);
  if (!refused.empty()) {
    if (shaping->wants_costs) stats().shape_reason += "; not learned: " + refused;
    return;
  }
  ShapeLearning::Make make = [device = ordinal(), programmatic = lowering().programmatic,
                              errors = current_.host_errors](
                                 const Plan& plan, ExecutableValues values,
                                 std::shared_ptr<const GraphShaping> shaping) {
    InstanceOptions options;
    options.build = {device, nullptr, ProfileMode::off, nullptr, programmatic, nullptr};
    // A candidate runs launches of the current instance, and the winner takes over its
    // count: their host tasks' errors are the current one's.
    options.errors = errors;
    options.shaping = std::move(shaping);
    TransientBinding transients;  // none: learning_refused
    return instantiate(plan, values, transients, std::move(options));
  };
  learning_ =
      std::make_unique<ShapeLearning>(shared_plan(), std::move(make), default_learning_pace());
  if (!switched_) switched_ = cuda::create_event(ordinal(), false, cuda::for_executable(name()));
  stats().shape_reason = learning_->reason();
}

ShapeLearning::Turn GraphExecutable::learning_turn(cudaStream_t stream) {
  ShapeLearning::Turn turn =
      learning_->turn(current_launch().index, shared_plan(), args_,
                      [this](Instance& in, std::uint32_t c) { set_node(in, c); });
  retire_all(std::move(turn.drop));
  if (turn.shaped) {
    // It shares the current instance's host errors: launches go on being counted as before.
    auto replaced = std::make_unique<Instance>(std::exchange(current_, std::move(*turn.shaped)));
    learning_->replaced(std::move(replaced), stream, ordinal());
    turn.shaped.reset();
    note_shaping(current_.built.shaping.get());
    stats().shape_learned_at_launch = current_launch().index;
  }
  if (learning_->done()) stats().shape_reason = learning_->reason();
  return turn;
}

void GraphExecutable::set_node(Instance& in, std::uint32_t c) {
  cuda::Graph captured = GraphBuilder::update_node(plan(), c, args_.read(), ordinal(),
                                                   in.exec.get(), in.built.nodes[c]);
  if (captured) keep_recaptured(in, c, std::move(captured));
}

void GraphExecutable::retire_all(std::vector<std::unique_ptr<Instance>> instances) {
  for (auto& in : instances) retire(std::shared_ptr<Instance>(std::move(in)));
}

// A launch CUPTI traces: its host tasks time themselves, its graph launch's records are
// routed to it, and an event marks its end for the reader. Collection is on only while its
// cudaGraphLaunch is made, even when every launch is traced: CUPTI collects process-wide,
// and left on it traced every other launch of the process too, event-profiled ones
// included (a 100 us kernel measured 500-1,100 us by events beside a CUPTI executable, run
// 49). CUPTI decides what a launch records as it is enqueued: records of a launch still
// arrive after the window closed (the sampled launches of run 49 all had theirs).
void GraphExecutable::enqueue_traced(CudaQueue& queue, const cuda::Served& served) {
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

std::optional<Profile> GraphExecutable::read_last_profile() const {
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

std::vector<ClampedDispatch> GraphExecutable::clamped_dispatches() const {
  std::lock_guard lock(mutex());
  return reports_ ? reports_->clamped() : std::vector<ClampedDispatch>{};
}

void GraphExecutable::note_shaping(const GraphShaping* shaped) {
  static const GraphShaping unshaped;
  const GraphShaping& shaping = shaped ? *shaped : unshaped;
  ExecutableStats& s = this->stats();
  s.shape_lanes = shaping.lanes;
  s.edges_shape_added = shaping.edges_added;
  s.edges_shape_dropped = shaping.edges_dropped;
  s.shape_reason = shaping.reason;
}

}  // namespace cmdgraph::detail
