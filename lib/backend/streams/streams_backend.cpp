// StreamsExecutable: lanes and events made once; each launch enqueues the whole schedule.
#include "backend/streams/streams_backend.hpp"

#include "backend/cuda_common/launch_fence.hpp"
#include "backend/cuda_common/profile_reader.hpp"
#include "backend/streams/lanes.hpp"
#include "backend/streams/stream_tasks.hpp"
#include "cuda/check.hpp"
#include "error/task_failure.hpp"
#include "observe/nvtx.hpp"
#include "plan/compare.hpp"
#include "sync/queue_state.hpp"

#include <cmdgraph/error.hpp>

#include <algorithm>
#include <map>
#include <mutex>
#include <exception>

namespace cmdgraph::detail {
namespace {

// The host enqueues stream work one command at a time, ahead of the GPU: a loop, whose passes
// depend on values the GPU computes, needs a CUDA graph's conditional node or the host.
void refuse_loops(const Plan& plan) {
  if (const std::optional<std::string> loop = find_command(plan, CommandKind::loop)) {
    throw Error(errc::unsupported,
                "command '" + *loop + "' cannot run on the streams backend: a loop needs a CUDA "
                "graph (a conditional node) or the host backend",
                {*loop});
  }
}

class StreamsExecutable final : public ExecutableImpl {
 public:
  StreamsExecutable(std::shared_ptr<const Plan> plan, Device device, unsigned max_streams,
                    bool profile, ExecutableStats stats, ArgumentStore args)
      : ExecutableImpl(plan, device, std::move(stats)), max_streams_(max_streams),
        profile_(profile) {
    const cuda::ScopedDevice on(device.ordinal());
    adopt(std::move(plan), std::move(args));
    fork_ = cuda::create_event(device.ordinal(), false);
    done_ = cuda::create_event(device.ordinal(), false);
    auto& s = this->stats();
    s.backend = Backend::streams;
    s.streams = schedule_.lanes;
    s.events = schedule_.event_count();
    s.event_waits = schedule_.wait_count();
    s.cross_stream_edges = schedule_.cross_edges;
  }

  ~StreamsExecutable() override {
    // Host callbacks of a launch in flight point into this object: let it finish first.
    if (auto queue = last_queue_.lock()) queue->synchronize_quietly();
  }

  Fence launch(const std::shared_ptr<QueueState>& queue, const SubmitInfo& info) override {
    const cuda::ScopedDevice on(device().ordinal());
    std::lock_guard lock(mutex_);
    QueueState::Submission submission(*queue);
    const std::vector<cudaStream_t>& lanes = lanes_for(*queue);
    cudaStream_t main = lanes[0];
    queue->enqueue_semaphore_waits(info);  // before the fork: every lane follows them
    const std::shared_ptr<QueueState> previous = last_queue_.lock();
    if (previous && previous != queue) {
      // The previous launch ran from another queue: start after it, as CUDA does for graphs.
      CMDGRAPH_CUDA(cuda::for_executable(name()), cudaEventRecord, done_.get(), previous->stream());
      CMDGRAPH_CUDA(cuda::for_executable(name()), cudaStreamWaitEvent, main, done_.get(), 0u);
    }
    last_queue_ = queue;
    if (profile_) {
      CMDGRAPH_CUDA(cuda::for_executable(name()), cudaEventRecord, profiling_.launch_start.get(), main);
      last_started_ = std::chrono::steady_clock::now();
    }
    if (forks_) CMDGRAPH_CUDA(cuda::for_executable(name()), cudaEventRecord, fork_.get(), main);
    std::uint32_t current = 0;
    try {
      for (std::uint32_t t : schedule_.order) {
        current = t;
        cudaStream_t s = lanes[schedule_.lane[t]];
        const StreamTask& task = tasks_[t];
        if (schedule_.fork_wait[t]) CMDGRAPH_CUDA(task.name, cudaStreamWaitEvent, s, fork_.get(), 0u);
        for (std::uint32_t p : schedule_.waits[t]) {
          CMDGRAPH_CUDA(task.name, cudaStreamWaitEvent, s, events_[p].get(), 0u);
        }
        const NvtxRange range(task.name);
        const std::int64_t point = profile_ ? profiling_.point_of[t] : -1;
        if (point >= 0) CMDGRAPH_CUDA(task.name, cudaEventRecord, profiling_.points[point].start, s);
        enqueue(task, s);
        if (point >= 0) CMDGRAPH_CUDA(task.name, cudaEventRecord, profiling_.points[point].end, s);
        if (schedule_.records[t]) CMDGRAPH_CUDA(task.name, cudaEventRecord, events_[t].get(), s);
      }
      for (std::uint32_t j : schedule_.joins) {
        CMDGRAPH_CUDA(cuda::for_executable(name()), cudaStreamWaitEvent, main, events_[j].get(), 0u);
      }
      queue->enqueue_semaphore_signals(info);
    } catch (const Error&) {
      join_everything(lanes);
      throw;
    } catch (...) {
      join_everything(lanes);
      std::rethrow_exception(task_failure("capture", tasks_[current].name));
    }
    const std::uint64_t launch = launches_++;
    std::shared_ptr<FenceState> fence = launch_fence(context_, launch, queue);
    submission.commit(fence, context_, launch);
    retirement_.release_finished();
    return Fence(std::move(fence));
  }

  std::unique_ptr<ExecutableImpl> clone() const override {
    return std::make_unique<StreamsExecutable>(shared_plan(), device(), max_streams_, profile_,
                                               stats(), *arguments_);
  }

  Profile last_profile() const override {
    if (!profile_) return ExecutableImpl::last_profile();
    std::lock_guard lock(mutex_);
    if (launches_ == 0) {
      throw Error(errc::wrong_state, "executable '" + name() + "' has not been launched yet");
    }
    return read_profile(*this, profiling_.launch_start.get(), profiling_.points, "streams",
                        last_started_, profiling_.lanes);
  }

  std::vector<unsigned> command_lanes() const override {
    std::lock_guard lock(mutex_);
    std::vector<unsigned> lanes;
    for (std::uint32_t task : flat_.root_task) lanes.push_back(schedule_.lane[task]);
    return lanes;
  }

  ArgumentStore& arguments_for_update() override { return *arguments_; }

  void apply_update(std::uint32_t c) override {
    const CommandKind kind = plan().command(c).kind;
    if (kind == CommandKind::kernel || kind == CommandKind::parallel_for) {
      refresh_kernel(tasks_[flat_.root_task[c]], device().ordinal());
    }  // copies and fills read their values as they are enqueued
  }

  void check_memory(std::uint32_t c, const MemoryRange& r) const override {
    check_device_memory(plan(), c, r, device().ordinal());
  }

  UpdateResult update_from(std::shared_ptr<const Plan> plan,
                           const UpdateOptions& options) override {
    refuse_loops(*plan);
    ArgumentStore args = plan->recording->arguments();
    check_runs_on_device(*plan, args, device().ordinal());
    const Difference difference = structural_difference(this->plan(), *plan);
    if (difference && !options.reinstantiate_if_needed) {
      throw Error(errc::update_refused, "executable '" + name() +
                                            "' cannot take the update in place: " + difference.what,
                  {difference.command});
    }
    const cuda::ScopedDevice on(device().ordinal());
    std::lock_guard lock(mutex_);
    adopt(std::move(plan), std::move(args));
    return {static_cast<bool>(difference), difference.what};
  }

 private:
  // Takes `plan` with `args`: schedule, per-task preparation, events. What launches in flight
  // may still use (host callbacks) is kept until they finish.
  void adopt(std::shared_ptr<const Plan> plan, ArgumentStore args) {
    const int device = this->device().ordinal();
    FlatPlan flat = flatten(*plan);
    LaneSchedule schedule = assign_lanes(flat, max_streams_);
    auto errors = std::make_shared<HostErrors>(std::max<std::uint32_t>(1, count_host_tasks(*plan)));
    auto callbacks = std::make_shared<HostCallbacks>();
    auto arguments = std::make_unique<ArgumentStore>(std::move(args));
    std::vector<StreamTask> tasks = prepare_tasks(flat, *plan, *arguments, device, *callbacks, errors.get());
    std::vector<cuda::Event> events(flat.tasks.size());
    for (std::size_t t = 0; t < flat.tasks.size(); ++t) {
      if (schedule.records[t]) events[t] = cuda::create_event(device, false);
    }
    Profiling profiling;
    if (profile_) profiling = make_profiling(flat, schedule, device);
    auto context = std::make_shared<LaunchContext>();
    context->executable = plan->recording->name();
    context->device = device;
    context->suspects = device_code_commands(*plan);
    context->host_errors = errors;
    context->events = context_ ? context_->events : std::make_shared<EventPool>(device);

    // Nothing above touched this object: commit.
    if (callbacks_) {
      retirement_.retire(std::make_shared<Keep>(Keep{host_errors_, callbacks_}), last_queue_.lock(),
                         device);
    }
    flat_ = std::move(flat);
    schedule_ = std::move(schedule);
    host_errors_ = std::move(errors);
    callbacks_ = std::move(callbacks);
    arguments_ = std::move(arguments);
    tasks_ = std::move(tasks);
    events_ = std::move(events);
    profiling_ = std::move(profiling);
    context_ = std::move(context);
    forks_ = std::any_of(schedule_.fork_wait.begin(), schedule_.fork_wait.end(), [](auto f) { return f; });
    launches_ = 0;
    replace_plan(std::move(plan));
  }

  // The lanes for a launch from `queue`: its own stream, then this executable's streams made
  // with the queue's priority (once per priority).
  const std::vector<cudaStream_t>& lanes_for(QueueState& queue) {
    auto& owned = streams_[queue.native_priority()];
    auto& handles = handles_[queue.native_priority()];
    while (owned.size() + 1 < schedule_.lanes) {
      owned.push_back(cuda::create_stream(device().ordinal(), queue.native_priority(), cuda::for_executable(name())));
    }
    while (rescue_.size() + 1 < schedule_.lanes) {
      rescue_.push_back(cuda::create_event(device().ordinal(), false, cuda::for_executable(name())));
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
      cudaEvent_t e = rescue_[l - 1].get();
      (void)cuda::try_call([&] { return cudaEventRecord(e, lanes[l]); });
      (void)cuda::try_call([&] { return cudaStreamWaitEvent(lanes[0], e, 0u); });
    }
    cuda::clear_error();
  }

  // Profiling: timed events around every task that is a command, and the launch's first.
  struct Profiling {
    cuda::Event launch_start;
    std::vector<cuda::Event> events;
    std::vector<ProfilePoint> points;
    std::vector<unsigned> lanes;          // per point
    std::vector<std::int64_t> point_of;   // per task, -1 for joins
  };
  static Profiling make_profiling(const FlatPlan& flat, const LaneSchedule& schedule, int device) {
    Profiling p;
    p.launch_start = cuda::create_event(device, true);
    p.point_of.assign(flat.tasks.size(), -1);
    for (std::uint32_t t = 0; t < flat.tasks.size(); ++t) {
      const FlatTask& task = flat.tasks[t];
      if (task.is_join()) continue;
      p.point_of[t] = static_cast<std::int64_t>(p.points.size());
      p.events.push_back(cuda::create_event(device, true));
      p.events.push_back(cuda::create_event(device, true));
      p.points.push_back({task.plan, task.command, p.events[p.events.size() - 2].get(),
                          p.events.back().get()});
      p.lanes.push_back(schedule.lane[t]);
    }
    return p;
  }

  struct Keep {
    std::shared_ptr<HostErrors> errors;
    std::shared_ptr<HostCallbacks> callbacks;
  };

  unsigned max_streams_;
  bool profile_;
  Profiling profiling_;
  std::chrono::steady_clock::time_point last_started_;
  std::unique_ptr<ArgumentStore> arguments_;  // on the heap: tasks point into it
  FlatPlan flat_;
  LaneSchedule schedule_;
  std::shared_ptr<HostErrors> host_errors_;
  std::shared_ptr<HostCallbacks> callbacks_;
  std::vector<StreamTask> tasks_;
  std::vector<cuda::Event> events_;
  cuda::Event fork_, done_;
  std::vector<cuda::Event> rescue_;  // per lane, for join_everything
  bool forks_ = false;
  std::map<int, std::vector<cuda::Stream>> streams_;
  std::map<int, std::vector<cudaStream_t>> handles_;
  std::shared_ptr<const LaunchContext> context_;
  mutable std::mutex mutex_;
  std::uint64_t launches_ = 0;
  std::weak_ptr<QueueState> last_queue_;
  Retirement retirement_;
};

}  // namespace

std::unique_ptr<ExecutableImpl> lower_to_streams(std::shared_ptr<const Plan> plan, Device device,
                                                 const CompileOptions& options,
                                                 ExecutableStats stats) {
  refuse_loops(*plan);
  ArgumentStore args = plan->recording->arguments();
  check_runs_on_device(*plan, args, device.ordinal());
  return std::make_unique<StreamsExecutable>(std::move(plan), device, options.max_streams,
                                             options.profile, std::move(stats), std::move(args));
}

}  // namespace cmdgraph::detail
