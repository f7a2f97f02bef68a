// StreamsExecutable: lanes, events and the graphs of conditional commands made once; each
// launch enqueues the whole schedule.
#include "backend/streams/streams_backend.hpp"

#include "backend/cuda_launch/cuda_executable.hpp"
#include "backend/cuda_launch/profile_points.hpp"
#include "backend/streams/stream_profiling.hpp"
#include "backend/streams/stream_steps.hpp"
#include "backend/streams/stream_tasks.hpp"
#include "cuda/runtime.hpp"
#include "cuda/graph_ops.hpp"
#include "cuda/stream_ops.hpp"
#include "observe/nvtx.hpp"

#include <cmdgraph/error.hpp>

#include <algorithm>
#include <utility>
#include <map>

namespace cmdgraph::detail {
namespace {

class StreamsExecutable final : public CudaExecutable {
 public:
  StreamsExecutable(std::shared_ptr<const Plan> plan, Device device, ExecutableStats stats,
                    const CudaLowering& lowering, StartingValues values)
      : CudaExecutable(plan, device, std::move(stats), lowering) {
    const cuda::ScopedDevice on(device.ordinal());
    adopt(std::move(plan), values.args.read(), std::move(values.transients));
    fork_ = cuda::create_event(device.ordinal(), false);
    done_ = cuda::create_event(device.ordinal(), false);
    auto& s = this->stats();
    s.backend = Backend::streams;
    s.streams = schedule_.lanes;
    s.events = schedule_.event_count();
    s.event_waits = schedule_.wait_count();
    s.cross_stream_edges = schedule_.cross_edges;
    s.edges_programmatic = programmatic_edges_;
    s.conditional_graphs = static_cast<std::size_t>(
        std::count_if(tasks_.begin(), tasks_.end(), [](const StreamTask& t) { return t.graph; }));
  }
  ~StreamsExecutable() override { wait_for_launches(); }

  std::unique_ptr<ExecutableImpl> clone() const override {
    // An arena of its own, the values pointing there.
    return std::make_unique<StreamsExecutable>(shared_plan(), device(), stats_for_clone(),
                                               lowering(),
                                               StartingValues{ExecutableValues(arguments_),
                                                              transients_});
  }

  std::vector<unsigned> command_lanes() const override {
    std::lock_guard lock(mutex());
    std::vector<unsigned> lanes;
    for (std::uint32_t task : flat_.root_task) lanes.push_back(schedule_.lane[task]);
    return lanes;
  }

  ArgumentStore& arguments_for_update() override { return *arguments_; }
  const ArgumentStore& current_values() const override { return *arguments_; }

  void apply_update(std::uint32_t c) override {
    // Copies and fills read their values as they are enqueued; kernels were prepared.
    StreamTask& task = tasks_[flat_.root_task[c]];
    task.kernel = kernel_launch(plan().payload(c), *task.args, ordinal());
    program_.refresh(flat_.root_task[c], task);
  }

 private:
  void enqueue(CudaQueue& queue, CudaQueue* previous) override {
    const std::vector<cudaStream_t>& lanes = lanes_for(queue);
    cudaStream_t main = lanes[0];
    const cuda::Served served = cuda::for_executable(name());
    if (previous) {
      // The previous launch ran from another queue: start after it, as CUDA does for graphs.
      cuda::record_event(done_.get(), previous->stream(), served);
      cuda::wait_event(main, done_.get(), served);
    }
    if (arena_pending_) {
      // Allocated on a stream of its own: the first launch after waits for it, once.
      cuda::wait_event(main, arena_->ready(), served);
      arena_pending_ = false;
    }
    if (current_launch().profiled) {
      cuda::record_event(profiling_.launch_start.get(), main, served);
    }
    if (forks_) cuda::record_event(fork_.get(), main, served);
    try {
      for (const StreamStep& step : program_.steps()) enqueue_step(step, lanes);
      for (std::uint32_t j : schedule_.joins) cuda::wait_event(main, events_[j].get(), served);
    } catch (...) {
      join_everything(lanes);
      throw;
    }
  }

  void enqueue_step(const StreamStep& step, const std::vector<cudaStream_t>& lanes) {
    cudaStream_t s = lanes[step.lane];
    const cuda::Served served(step.label());
    if (step.fork_wait) cuda::wait_event(s, fork_.get(), served);
    for (cudaEvent_t e : program_.waits(step)) cuda::wait_event(s, e, served);
    const NvtxRange range(step.name);
    const bool profiled = current_launch().profiled;
    if (profiled) {
      for (cudaEvent_t e : profiling_.before[step.task]) cuda::record_event(e, s, served);
    }
    if (step.function) {
      // Prepared at compile time: the launch path need not visit the task or the plan.
      if (step.programmatic) {
        cuda::launch_kernel(step.function, step.grid, step.block, step.params, step.shared_bytes,
                            s, cuda::LaunchAttributes{.programmatic = true}, served);
      } else {
        cuda::launch_kernel(step.function, step.grid, step.block, step.params, step.shared_bytes,
                            s, served);
      }
    } else if (const StreamTask& task = tasks_[step.task]; !task.task->is_join()) {
      const StreamSite site{s,
                            *task.args,
                            nullptr,
                            task.callback,
                            task.graph ? task.graph->exec.get() : nullptr,
                            served,
                            task.launch};
      enqueue_on_stream(task.task->plan->payload(task.task->command), site);
    }
    if (profiled) {
      for (cudaEvent_t e : profiling_.after[step.task]) cuda::record_event(e, s, served);
    }
    if (step.record) cuda::record_event(step.record, s, served);
  }

  std::optional<Profile> read_last_profile() const override {
    std::lock_guard lock(mutex());
    if (!last_profiled()) return std::nullopt;
    Profile p = read_profile(plan(), profiling_.launch_start.get(), profiling_.points, "streams",
                             last_started(), profiling_.lanes);
    p.launch = last_profiled()->index;
    return p;
  }

  UpdateResult take(std::shared_ptr<const Plan> plan, const Difference& difference,
                    const UpdateOptions& options) override {
    const std::shared_ptr<const ArgumentStore> args = plan->values;
    const cuda::ScopedDevice on(ordinal());
    std::lock_guard lock(mutex());
    TransientBinding transients(*plan);
    if (difference) {
      adopt(std::move(plan), *args, std::move(transients));
      return {true, difference.what};
    }
    std::string why = adopt(std::move(plan), *args, std::move(transients), &options);
    return {!why.empty(), std::move(why)};
  }

  // Takes `plan` with `args`: schedule, per-task preparation, events, the transients' arena
  // (kept when big enough), the graphs of conditional commands. With `in_place` (a plan of the
  // current one's structure), each graph takes the new values in place where CUDA accepts
  // them; see attach_graphs. What launches in flight may still use (host callbacks, an arena
  // or graphs replaced) is kept until they finish. Returns why a graph was re-instantiated, if
  // one was.
  std::string adopt(std::shared_ptr<const Plan> plan, const ArgumentStore& args,
                    TransientBinding transients, const UpdateOptions* in_place = nullptr) {
    const int device = ordinal();
    FlatPlan flat = flatten(*plan);
    LaneSchedule schedule = assign_lanes(flat, lowering().max_streams, lane_classes(flat, device));
    auto errors = std::make_shared<HostErrors>(std::max<std::uint32_t>(1, count_host_tasks(*plan)));
    auto callbacks = std::make_shared<HostCallbacks>();
    // A copy of its own, which the tasks point into.
    auto arguments = std::make_shared<ArgumentStore>(args);
    std::shared_ptr<cuda::PoolMemory> arena = arena_;
    const std::size_t needed = plan->memory.arena_bytes;
    if (needed > 0 && (!arena || arena->bytes() < needed)) {
      arena = std::make_shared<cuda::PoolMemory>(device, needed, cuda::for_executable(name()));
    }
    if (needed > 0) transients.bind_arena(*plan, arena->get(), *arguments);
    std::vector<StreamTask> tasks =
        prepare_tasks(flat, *plan, *arguments, device, *callbacks, errors.get());
    // Profiling records events between tasks: programmatic launches need none between.
    const std::size_t programmatic =
        lowering().programmatic && !profiling() ? set_programmatic(tasks, flat, schedule) : 0;
    std::vector<cuda::Event> events(flat.tasks.size());
    for (std::size_t t = 0; t < flat.tasks.size(); ++t) {
      if (schedule.records[t]) events[t] = cuda::create_event(device, false);
    }
    StreamProfiling timers;
    if (profiling()) timers = stream_profiling(flat, schedule, device);
    auto context = launch_context(*plan, device, errors,
                                  events_pool_ ? events_pool_ : std::make_shared<EventPool>(device));
    // The vectors move below; their elements stay where the program points.
    StreamProgram program(schedule, tasks, events);
    std::shared_ptr<DispatchReports> reports = pinned_reports(*plan);
    // Last: graphs taken in place are rolled back when this fails, and nothing after it can.
    std::string why = attach_graphs(tasks, *plan, reports, in_place);

    // Nothing above touched this object, but for graphs updated in place: commit.
    if (callbacks_) {
      auto keep = std::make_shared<Keep>(Keep{host_errors_, callbacks_, {}});
      for (const StreamTask& t : tasks_) {
        if (t.graph) keep->graphs.push_back(t.graph);
      }
      retire(std::move(keep));
    }
    if (arena_ && arena != arena_) retire(arena_);
    if (arena != arena_) arena_pending_ = true;
    arena_ = std::move(arena);
    transients_ = std::move(transients);
    flat_ = std::move(flat);
    schedule_ = std::move(schedule);
    host_errors_ = std::move(errors);
    callbacks_ = std::move(callbacks);
    arguments_ = std::move(arguments);
    tasks_ = std::move(tasks);
    events_ = std::move(events);
    program_ = std::move(program);
    profiling_ = std::move(timers);
    events_pool_ = context->events;
    reports_ = std::move(reports);  // the old ones stay with the graphs that write them
    programmatic_edges_ = programmatic;
    start_context(std::move(context));
    forks_ = std::any_of(schedule_.fork_wait.begin(), schedule_.fork_wait.end(), [](auto f) { return f; });
    replace_plan_after_launches(std::move(plan));
    return why;
  }

  // Gives every conditional task of `tasks` its graph, built with its values. With `in_place`,
  // `tasks` has the structure of tasks_ (task for task): each graph is taken into the current
  // task's instantiation where CUDA accepts it; where CUDA refuses, it is instantiated afresh
  // when `in_place` allows a rebuild, else Error(update_refused) names the command and every
  // graph taken so far is set back (as on any failure). Returns why a graph was instantiated
  // afresh, if one was.
  std::string attach_graphs(std::vector<StreamTask>& tasks, const Plan& root,
                            const std::shared_ptr<DispatchReports>& reports,
                            const UpdateOptions* in_place) {
    GraphBuilder builder({.device = ordinal(), .reports = reports});
    struct Taken {
      ConditionalGraph* graph;
      BuiltGraph fresh;
    };
    std::vector<Taken> taken;
    // Each instantiation takes back the graph it had; a failure there leaves nothing better to
    // do than go on with the others.
    auto set_back = [&taken]() noexcept {
      for (Taken& t : taken) {
        try {
          std::string ignored;
          cudaGraphNode_t at = nullptr;
          cuda::update_exec(t.graph->exec.get(), t.graph->built.graph.get(), ignored, at);
        } catch (...) {
        }
      }
    };
    std::string why;
    try {
      for (std::size_t i = 0; i < tasks.size(); ++i) {
        StreamTask& task = tasks[i];
        const FlatTask& t = *task.task;
        if (t.is_join() || !runs_own_graph(*t.plan, t.command)) continue;
        BuiltGraph fresh = builder.build_command(root, *t.plan, t.command, *task.args);
        // CUDA updates no graph with a device-updatable node in place: such a graph (an
        // indirect command's, or a conditional's holding one) is instantiated afresh.
        if (in_place && !fresh.reports && i < tasks_.size() && tasks_[i].graph) {
          const std::shared_ptr<ConditionalGraph>& current = tasks_[i].graph;
          if (take_in_place(*current, fresh, task.name, *in_place, why)) {
            task.graph = current;
            taken.push_back({current.get(), std::move(fresh)});
            continue;
          }
        }
        auto graph = std::make_shared<ConditionalGraph>();
        graph->exec = cuda::instantiate(fresh.graph.get(), nullptr, {fresh.node_priority},
                                        cuda::Served(task.name),
                                        [&](cudaGraphNode_t n) { return fresh.name_of(n); });
        graph->built = std::move(fresh);
        task.graph = std::move(graph);
      }
    } catch (...) {
      set_back();
      throw;
    }
    // The instantiations taken in place now hold the fresh graphs' values.
    for (Taken& t : taken) t.graph->built = std::move(t.fresh);
    return why;
  }

  // Takes `fresh` into `current`'s instantiation; true when CUDA took it. When CUDA refuses:
  // Error(update_refused) naming the command (`task`, or the body command CUDA names), unless
  // `options` allow a rebuild; then false, and `why` says why if nothing said so before.
  bool take_in_place(ConditionalGraph& current, const BuiltGraph& fresh, const std::string& task,
                     const UpdateOptions& options, std::string& why) const {
    std::string refused;
    cudaGraphNode_t at = nullptr;
    const cudaError_t status =
        cuda::update_exec(current.exec.get(), fresh.graph.get(), refused, at);
    if (status == cudaSuccess) return true;
    const std::string named = fresh.name_of(at);
    const std::string command = named.empty() ? task : named;
    const std::string reason =
        "CUDA refused the update (" + refused + ") at command '" + command + "'";
    if (!options.reinstantiate_if_needed) {
      refuse_update(reason, {command}, static_cast<int>(status));
    }
    if (why.empty()) why = reason;
    return false;
  }

  // The lanes for a launch from `queue`: its own stream, then this executable's streams made
  // with the priority of their lane's class, the queue's for class queue (once per queue
  // priority).
  const std::vector<cudaStream_t>& lanes_for(CudaQueue& queue) {
    auto& owned = streams_[queue.native_priority()];
    auto& handles = handles_[queue.native_priority()];
    while (owned.size() + 1 < schedule_.lanes) {
      const std::int32_t cls = schedule_.lane_class[owned.size() + 1];
      owned.push_back(cuda::create_stream(ordinal(),
                                          cls == lane_class::queue ? queue.native_priority() : cls,
                                          cuda::for_executable(name())));
    }
    while (rescue_.size() + 1 < schedule_.lanes) {
      rescue_.push_back(cuda::create_event(ordinal(), false, cuda::for_executable(name())));
    }
    handles.resize(schedule_.lanes);
    handles[0] = queue.stream();
    for (std::size_t l = 1; l < schedule_.lanes; ++l) handles[l] = owned[l - 1].get();
    return handles;
  }

  // After a failure part-way through a launch: every lane joins the main stream, so the
  // queue's later work still follows whatever was enqueued.
  void join_everything(const std::vector<cudaStream_t>& lanes) noexcept {
    for (std::size_t l = 1; l < lanes.size(); ++l) {
      try {
        cuda::record_event(rescue_[l - 1].get(), lanes[l], cuda::no_command);
        cuda::wait_event(lanes[0], rescue_[l - 1].get(), cuda::no_command);
      } catch (const Error&) {
        // Nothing more can be done for this lane; the queue's wait reports the failure.
      }
    }
  }

  struct Keep {
    std::shared_ptr<HostErrors> errors;
    std::shared_ptr<HostCallbacks> callbacks;
    std::vector<std::shared_ptr<ConditionalGraph>> graphs;
  };

  // Whether the streams backend launches command `c` of `plan` as a graph of its own: a
  // conditional command, or an indirect one, which the device decides or sizes as it runs.
  static bool runs_own_graph(const Plan& plan, std::uint32_t c) {
    const KindTraits& kind = traits(plan.kind(c));
    return kind.conditional || kind.sized_on_device;
  }

  std::vector<ClampedDispatch> clamped_dispatches() const override {
    std::lock_guard lock(mutex());
    return reports_ ? reports_->clamped() : std::vector<ClampedDispatch>{};
  }

  std::size_t programmatic_edges_ = 0;  // lowered as programmatic launches
  std::shared_ptr<DispatchReports> reports_;  // where its indirect commands report
  StreamProfiling profiling_;
  std::shared_ptr<ArgumentStore> arguments_;  // on the heap: tasks point into it
  FlatPlan flat_;
  LaneSchedule schedule_;
  std::shared_ptr<HostErrors> host_errors_;
  std::shared_ptr<HostCallbacks> callbacks_;
  std::vector<StreamTask> tasks_;
  std::vector<cuda::Event> events_;
  StreamProgram program_;  // what a launch enqueues: tasks_ and events_ in the schedule's order
  cuda::Event fork_, done_;
  std::vector<cuda::Event> rescue_;  // per lane, for join_everything
  bool forks_ = false;
  std::map<int, std::vector<cuda::Stream>> streams_;
  std::map<int, std::vector<cudaStream_t>> handles_;
  std::shared_ptr<EventPool> events_pool_;
  std::shared_ptr<cuda::PoolMemory> arena_;  // the transients' memory, if any
  bool arena_pending_ = false;               // no launch has waited for its allocation yet
};

}  // namespace

std::unique_ptr<ExecutableImpl> lower_to_streams(std::shared_ptr<const Plan> plan, Device device,
                                                 const CompileOptions& options,
                                                 ExecutableStats stats) {
  check_runs_on_device(*plan, device.ordinal());
  StartingValues values = StartingValues::of(*plan);
  return std::make_unique<StreamsExecutable>(std::move(plan), device, std::move(stats),
                                             CudaLowering::of(options), std::move(values));
}

}  // namespace cmdgraph::detail
