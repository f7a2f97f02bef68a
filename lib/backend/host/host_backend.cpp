// lower_to_host: refuse what the CPU cannot run, flatten, and wrap in HostExecutable.
#include "backend/host/host_backend.hpp"

#include "backend/host/host_launch.hpp"
#include "plan/compare.hpp"
#include "sync/semaphore_state.hpp"
#include "sync/thread_pool.hpp"
#include "sync/event_state.hpp"
#include "sync/queue_state.hpp"

#include <cmdgraph/error.hpp>

#include <mutex>

namespace cmdgraph::detail {
namespace {

[[noreturn]] void refuse(const Plan& plan, std::uint32_t c, const Plan& root, errc code,
                         const std::string& why) {
  const std::string name = command_label(plan, c, root);
  throw Error(code, "command '" + name + "' cannot run on the host backend: " + why, {name});
}

void check_memory(const Plan& plan, std::uint32_t c, const Plan& root, const MemoryRange& r) {
  if (r.space == MemorySpace::device) {
    refuse(plan, c, root, errc::device_mismatch,
           "it touches memory of cuda:" + std::to_string(r.device) + ", which the CPU cannot access");
  }
}

void check_runs_on_host(const Plan& plan, const Plan& root) {
  const ArgumentStore& args = plan.recording->arguments();
  for (std::uint32_t c = 0; c < plan.size(); ++c) {
    const RecordedCommand& cmd = plan.command(c);
    switch (cmd.kind) {
      case CommandKind::kernel:
        refuse(plan, c, root, errc::unsupported,
               "a __global__ kernel needs a CUDA device (record it as parallel_for to run it on "
               "both)");
      case CommandKind::capture:
        refuse(plan, c, root, errc::unsupported, "stream capture needs a CUDA device");
      case CommandKind::parallel_for:
        if (!std::get<ParallelForPayload>(cmd.payload).host) {
          refuse(plan, c, root, errc::unsupported, "its functor has no host version (__device__ only)");
        }
        break;
      case CommandKind::copy: {
        const auto& cp = args.get<CopySpec>(std::get<CopyPayload>(cmd.payload).spec);
        check_memory(plan, c, root, cp.dst);
        check_memory(plan, c, root, cp.src);
        break;
      }
      case CommandKind::fill:
        check_memory(plan, c, root, args.get<FillSpec>(std::get<FillPayload>(cmd.payload).spec).dst);
        break;
      case CommandKind::event_record:
      case CommandKind::event_wait:
        if (!std::get<EventPayload>(cmd.payload).event->device().is_host()) {
          refuse(plan, c, root, errc::device_mismatch,
                 "its event belongs to " +
                     std::get<EventPayload>(cmd.payload).event->device().name());
        }
        break;
      case CommandKind::loop:
        if (!std::get<LoopPayload>(cmd.payload).host) {
          refuse(plan, c, root, errc::unsupported, "its condition has no host version (__device__ only)");
        }
        [[fallthrough]];
      case CommandKind::nested:
        check_runs_on_host(*plan.nested[c], root);
        break;
      case CommandKind::host:
      case CommandKind::barrier:
        break;
    }
  }
}

// Starts one launch: after the semaphore waits and the executable's previous launch, from the
// pool. Never throws: a failure while starting (e.g. out of memory) ends the launch with it.
void start_launch(std::shared_ptr<const HostProgram> program,
                  std::shared_ptr<const ArgumentStore> arguments,
                  std::shared_ptr<FenceState> fence, std::shared_ptr<FenceState> previous,
                  const SubmitInfo& info, std::shared_ptr<HostProfileStore> profile,
                  QueueState::Done done) noexcept {
  std::shared_ptr<LaunchEnd> end;
  try {
    end = std::make_shared<LaunchEnd>(fence, done);
    auto signal = [info] {
      for (const SemaphoreValue& s : info.signal) s.semaphore->state()->advance(s.value);
    };
    auto go = [program, arguments, end, signal, profile] {
      try {
        auto launch = std::make_shared<HostLaunch>(
            program, arguments, [end](std::exception_ptr error) { (*end)(std::move(error)); },
            signal, profile);
        host_pool().post([launch] { launch->start(); });
      } catch (...) {
        (*end)(std::current_exception());
      }
    };
    auto after_previous = [previous, go]() mutable {
      if (previous) {
        previous->on_complete(std::move(go));
      } else {
        go();
      }
    };
    when_all_reached(info.wait, std::move(after_previous));
  } catch (...) {
    const std::exception_ptr error = std::current_exception();
    if (end) {
      (*end)(error);
    } else {
      fence->complete(error);
      done(error);
    }
  }
}

// The program of `plan`, its commands named as parts of `root`, with one for each loop's body.
std::shared_ptr<const HostProgram> program_of(std::shared_ptr<const Plan> plan, const Plan& root) {
  auto program = std::make_shared<HostProgram>();
  program->flat = flatten(*plan);
  const std::size_t n = program->flat.tasks.size();
  program->names.reserve(n);
  program->loop_bodies.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const FlatTask& t = program->flat.tasks[i];
    program->names.push_back(t.is_join() ? std::string("join")
                                          : command_label(*t.plan, t.command, root));
    if (!t.is_join() && t.plan->command(t.command).kind == CommandKind::loop) {
      program->loop_bodies[i] = program_of(t.plan->nested[t.command], root);
    }
  }
  program->plan = std::move(plan);
  return program;
}

std::shared_ptr<const HostProgram> make_program(std::shared_ptr<const Plan> plan) {
  check_runs_on_host(*plan, *plan);
  const Plan& root = *plan;
  return program_of(std::move(plan), root);
}

class HostExecutable final : public ExecutableImpl {
 public:
  HostExecutable(std::shared_ptr<const HostProgram> program, ExecutableStats stats, bool profile)
      : ExecutableImpl(program->plan, Device::host(), std::move(stats)),
        program_(std::move(program)),
        arguments_(std::make_shared<ArgumentStore>(program_->plan->recording->arguments())),
        profile_(profile ? std::make_shared<HostProfileStore>() : nullptr) {}

  Fence launch(const std::shared_ptr<QueueState>& queue, const SubmitInfo& info) override {
    auto fence = std::make_shared<FenceState>();
    // Two threads may launch at once: the lock makes each queue see launches in the order
    // they chain, so no queued launch ever waits for one queued behind it.
    std::lock_guard lock(mutex_);
    std::shared_ptr<FenceState> previous = last_;
    queue->submit([program = program_, arguments = std::shared_ptr<const ArgumentStore>(arguments_),
                   fence, previous, info, profile = profile_](QueueState::Done done) {
      start_launch(program, arguments, fence, previous, info, profile, std::move(done));
    });
    last_ = std::move(fence);  // only once the queue took the launch
    return Fence(last_);
  }

  std::unique_ptr<ExecutableImpl> clone() const override {
    auto copy = std::make_unique<HostExecutable>(program_, stats(), profile_ != nullptr);
    std::lock_guard lock(mutex_);
    copy->arguments_ = std::make_shared<ArgumentStore>(*arguments_);
    return copy;
  }

  Profile last_profile() const override {
    if (!profile_) return ExecutableImpl::last_profile();
    std::shared_ptr<FenceState> last;
    {
      std::lock_guard lock(mutex_);
      last = last_;
    }
    if (last) last->wait();
    std::lock_guard lock(profile_->mutex);
    if (!profile_->last) {
      throw Error(errc::wrong_state, "executable '" + name() + "' has not been launched yet");
    }
    return *profile_->last;
  }

  ArgumentStore& arguments_for_update() override {
    // Copy on write: launches in flight hold the store they started with.
    std::lock_guard lock(mutex_);
    if (arguments_.use_count() > 1) arguments_ = std::make_shared<ArgumentStore>(*arguments_);
    return *arguments_;
  }

  void apply_update(std::uint32_t) override {}  // launches read the arguments when they run

  void check_memory(std::uint32_t c, const MemoryRange& r) const override {
    detail::check_memory(plan(), c, plan(), r);
  }

  UpdateResult update_from(std::shared_ptr<const Plan> plan,
                           const UpdateOptions& options) override {
    const Difference difference = structural_difference(this->plan(), *plan);
    if (difference && !options.reinstantiate_if_needed) {
      throw Error(errc::update_refused, "executable '" + name() + "' cannot take the update in place: " +
                                            difference.what,
                  {difference.command});
    }
    auto program = make_program(plan);
    auto arguments = std::make_shared<ArgumentStore>(plan->recording->arguments());
    std::lock_guard lock(mutex_);
    program_ = std::move(program);
    arguments_ = std::move(arguments);
    replace_plan(std::move(plan));
    return {static_cast<bool>(difference), difference.what};
  }

 private:
  std::shared_ptr<const HostProgram> program_;
  mutable std::mutex mutex_;
  std::shared_ptr<ArgumentStore> arguments_;
  std::shared_ptr<HostProfileStore> profile_;
  std::shared_ptr<FenceState> last_;
};

}  // namespace

std::unique_ptr<ExecutableImpl> lower_to_host(std::shared_ptr<const Plan> plan,
                                              const CompileOptions& options, ExecutableStats stats) {
  stats.backend = Backend::host;
  return std::make_unique<HostExecutable>(make_program(std::move(plan)), std::move(stats),
                                          options.profile);
}

}  // namespace cmdgraph::detail
