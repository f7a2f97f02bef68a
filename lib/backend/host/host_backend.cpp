// lower_to_host: refuse what the CPU cannot run, flatten, and wrap in HostExecutable.
#include "backend/host/host_backend.hpp"

#include "backend/cuda_rules.hpp"
#include "backend/host/host_commands.hpp"
#include "backend/host/host_launch.hpp"
#include "backend/executable_values.hpp"
#include "sync/access.hpp"
#include "sync/event_state.hpp"
#include "sync/semaphore_state.hpp"
#include "sync/thread_pool.hpp"

#include <cmdgraph/error.hpp>

#include <mutex>

namespace cmdgraph::detail {
namespace {

[[noreturn]] void refuse(const Plan& plan, std::uint32_t c, const Plan& root,
                         const HostRefusal& refusal) {
  const std::string name = command_label(plan, c, root);
  throw Error(refusal.code, "command '" + name + "' cannot run on the host backend: " + refusal.why,
              {name});
}

void check_commands_on_host(const Plan& plan, const Plan& root) {
  for (std::uint32_t c = 0; c < plan.size(); ++c) {
    if (const HostRefusal refusal = host_refusal(plan.payload(c), plan.arguments())) {
      refuse(plan, c, root, refusal);
    }
    for (const auto& body : plan.bodies_of(c)) check_commands_on_host(*body, root);
  }
}

// Throws, naming the first command of `plan` the host cannot run, or (with `portable`) a CUDA
// device would refuse.
void check_runs_on_host(const Plan& plan, bool portable) {
  if (const auto breach = portable ? cuda_structure_breach(plan) : std::nullopt) {
    throw Error(errc::unsupported,
                "command '" + breach->command + "' cannot run on the host backend: " +
                    breach->why + " (the host backend refuses what CUDA devices refuse; "
                    "CompileOptions::portable = false lets a host-only program through)",
                {breach->command});
  }
  check_commands_on_host(plan, plan);
}

void check_values_on_host(const Plan& plan, std::span<const std::uint32_t> commands,
                          const Plan& root) {
  for (const std::uint32_t c : commands) {
    if (const HostRefusal refusal = host_refusal(plan.payload(c), plan.arguments())) {
      refuse(plan, c, root, refusal);
    }
  }
}

// The event generations of one launch of `flat`, taken as it is submitted: a wait sees the
// records submitted before its launch, then the launch's own records begin.
EventGenerations submit_events(const FlatPlan& flat) {
  EventGenerations generations(flat.tasks.size(), 0);
  for (std::uint32_t t = 0; t < flat.tasks.size(); ++t) {
    const FlatTask& task = flat.tasks[t];
    if (task.is_join()) continue;
    if (const auto event = awaited_event(task.plan->payload(task.command))) {
      generations[t] = event->latest_begun();
    }
  }
  for (std::uint32_t t = 0; t < flat.tasks.size(); ++t) {
    const FlatTask& task = flat.tasks[t];
    if (task.is_join()) continue;
    if (const auto event = recorded_event(task.plan->payload(task.command))) {
      generations[t] = event->begin_record();
    }
  }
  return generations;
}

// Starts one launch: after the semaphore waits and the executable's previous launch, from the
// pool. Never throws: a failure while starting (e.g. out of memory) ends the launch with it.
void start_launch(std::shared_ptr<const HostProgram> program,
                  std::shared_ptr<const ArgumentStore> arguments, EventGenerations generations,
                  std::shared_ptr<FenceState> fence, std::shared_ptr<FenceState> previous,
                  const SubmitInfo& info, std::shared_ptr<HostProfileStore> profile,
                  std::uint64_t index,
                  HostQueue::Done done) noexcept {
  std::shared_ptr<LaunchEnd> end;
  try {
    end = std::make_shared<LaunchEnd>(fence, done);
    auto signal = [info] {
      for (const SemaphoreValue& s : info.signal) s.semaphore->advance(s.value);
    };
    auto go = [program, arguments, generations = std::move(generations), end, signal,
               profile, index]() mutable {
      try {
        auto launch = std::make_shared<HostLaunch>(
            program, arguments, std::move(generations),
            [end](std::exception_ptr error) { (*end)(std::move(error)); }, signal, profile,
            index);
        host_pool().post([launch] { launch->start(); });
      } catch (...) {
        (*end)(std::current_exception());
      }
    };
    auto after_previous = [previous, go = std::move(go)]() mutable {
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
      done(error, fence.get());
    }
  }
}

// Whether the labels of `previous` (of an executable whose top plan was `was_root`) name the
// tasks of `flat` (of top plan `root`): the same commands with the same names, as a frame
// re-recorded with new values has.
bool same_labels(const HostProgram& previous, const Plan& was_root, const FlatPlan& flat,
                 const Plan& root) {
  const std::vector<FlatTask>& was = previous.flat.tasks;
  if (was.size() != flat.tasks.size()) return false;
  for (std::size_t i = 0; i < was.size(); ++i) {
    const FlatTask& a = was[i];
    const FlatTask& b = flat.tasks[i];
    if (a.command != b.command) return false;
    if (b.is_join()) continue;
    const bool top = b.plan == &root;
    // The names as given (empty for the default, the same for one index): none is made.
    if ((a.plan == &was_root) != top ||
        a.plan->command(a.command).name != b.plan->command(b.command).name ||
        (!top && a.plan->buffer_name != b.plan->buffer_name)) {
      return false;
    }
  }
  return true;
}

// What a program is made with: the executable's top plan, the clamps' reports, and the top
// plan of the program it replaces (null for none), whose labels it may keep.
struct ProgramSite {
  const Plan& root;
  std::shared_ptr<const DispatchReports> reports;
  const Plan* was_root;
};

// The program of `plan`, its commands named as parts of `site.root`, with one for each body
// of each conditional command; `previous`: the program it replaces, or null.
std::shared_ptr<const HostProgram> program_of(std::shared_ptr<const Plan> plan,
                                              const ProgramSite& site,
                                              const HostProgram* previous) {
  auto program = std::make_shared<HostProgram>();
  program->reports = site.reports;
  program->flat = flatten(*plan);
  const bool keep = previous && same_labels(*previous, *site.was_root, program->flat, site.root);
  program->labels = keep ? previous->labels
                         : std::make_shared<const TaskLabels>(program->flat.tasks, site.root);
  const std::size_t n = program->flat.tasks.size();
  program->bodies.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const FlatTask& t = program->flat.tasks[i];
    // Executed buffers are expanded in place; bodies left in a task run as it decides.
    if (t.is_join()) continue;
    const auto bodies = t.plan->bodies_of(t.command);
    for (std::size_t b = 0; b < bodies.size(); ++b) {
      // A conditional may have gained a body (another structure): that one is labelled anew.
      const bool had = keep && b < previous->bodies[i].size();
      program->bodies[i].push_back(
          program_of(bodies[b], site, had ? previous->bodies[i][b].get() : nullptr));
    }
  }
  program->plan = std::move(plan);
  return program;
}

// The program of `plan`, which runs on the host (check_runs_on_host); `previous`: the program
// of the plan it replaces, or null.
std::shared_ptr<const HostProgram> make_program(std::shared_ptr<const Plan> plan,
                                                const HostProgram* previous = nullptr) {
  const Plan& root = *plan;
  auto reports = std::make_shared<const DispatchReports>(root, [](std::size_t bytes) {
    return std::shared_ptr<void>(allocate(MemorySpace::host, -1, bytes),
                                 [](void* p) { deallocate(MemorySpace::host, -1, p); });
  });
  const ProgramSite site{root, std::move(reports), previous ? previous->plan.get() : nullptr};
  return program_of(std::move(plan), site, previous);
}

// The arena of a plan's transients in host memory; null without transients.
std::shared_ptr<void> host_arena(const Plan& plan) {
  if (plan.memory.empty()) return nullptr;
  return {allocate(MemorySpace::host, -1, plan.memory.arena_bytes),
          [](void* p) { deallocate(MemorySpace::host, -1, p); }};
}

class HostExecutable final : public ExecutableImpl {
 public:
  HostExecutable(std::shared_ptr<const HostProgram> program, ExecutableStats stats,
                 unsigned profile_every, bool portable)
      : ExecutableImpl(program->plan, Device::host(), std::move(stats), profile_every),
        program_(std::move(program)), portable_(portable),
        profile_(profiling() ? std::make_shared<HostProfileStore>() : nullptr) {
    place_transients(*program_->plan, program_->plan->values, TransientBinding(*program_->plan));
  }

  ~HostExecutable() override {
    // What the tasks reach may be freed once this returns (DESIGN: destruction waits).
    std::shared_ptr<FenceState> last;
    {
      std::lock_guard lock(mutex_);
      last = last_;
    }
    if (last) last->wait();
  }

  Fence launch(const std::shared_ptr<QueueState>& queue, const SubmitInfo& info) override {
    HostQueue& lane = *queue->as_host();
    auto fence = std::make_shared<FenceState>();
    // Two threads may launch at once: the lock makes each queue see launches in the order
    // they chain, so no queued launch ever waits for one queued behind it.
    std::lock_guard lock(mutex_);
    std::shared_ptr<FenceState> previous = last_;
    EventGenerations generations = submit_events(program_->flat);
    const LaunchNumber number = number_launch();
    lane.submit([program = program_, arguments = arguments_.shared(),
                 generations = std::move(generations), fence, previous, info,
                 profile = number.profiled ? profile_ : nullptr,
                 index = number.index](HostQueue::Done done) mutable {
      start_launch(program, arguments, std::move(generations), fence, previous, info, profile,
                   index, std::move(done));
    });
    last_ = std::move(fence);  // only once the queue took the launch
    return Access::fence(last_);
  }

  std::unique_ptr<ExecutableImpl> clone() const override {
    // A program of its own: its indirect commands report their own clamps.
    auto copy = std::make_unique<HostExecutable>(make_program(shared_plan()),
                                                 stats_for_clone(), profile_every(), portable_);
    std::lock_guard lock(mutex_);
    // Its own arena, with the values (updates included) pointing there.
    copy->place_transients(*program_->plan, arguments_.shared(), transients_);
    return copy;
  }

  ArgumentStore& arguments_for_update() override {
    // Copy on write: launches in flight hold the store they started with.
    std::lock_guard lock(mutex_);
    return arguments_.writable();
  }

  // Only the updating thread replaces the store (Updating): it reads it unlocked.
  const ArgumentStore& current_values() const override { return arguments_.read(); }

  void apply_update(std::uint32_t) override {}  // launches read the arguments when they run

  std::vector<ClampedDispatch> clamped_dispatches() const override {
    std::lock_guard lock(mutex_);
    return program_->reports->clamped();
  }

  void check_memory(std::uint32_t c, const MemoryRange& r) const override {
    if (const HostRefusal refusal = host_memory_refusal(r)) refuse(plan(), c, plan(), refusal);
  }

 private:
  void check_runs(const Plan& plan) const override { check_runs_on_host(plan, portable_); }
  void check_values(const Plan& plan, std::span<const std::uint32_t> commands,
                    const Plan& root) const override {
    check_values_on_host(plan, commands, root);
  }

  UpdateResult take(std::shared_ptr<const Plan> plan, const Difference& difference,
                    const UpdateOptions&) override {
    auto program = make_program(plan, program_.get());  // update_from checked it
    std::lock_guard lock(mutex_);
    // A fresh arena: launches in flight keep the old one through the stores they hold.
    place_transients(*plan, plan->values, TransientBinding(*plan));
    program_ = std::move(program);
    replace_plan(std::move(plan));
    return {static_cast<bool>(difference), difference.what};
  }

  std::optional<Profile> read_last_profile() const override {
    std::shared_ptr<FenceState> last;
    {
      std::lock_guard lock(mutex_);
      last = last_;
    }
    if (last) last->wait();
    std::lock_guard lock(profile_->mutex);
    return profile_->last;
  }

  // Takes `values` (of `plan`) with their transients placed in a fresh arena by `binding`:
  // shared while there are none, else a copy whose words point into the arena (and which
  // keeps it alive while a launch holds it).
  void place_transients(const Plan& plan, std::shared_ptr<const ArgumentStore> values,
                        TransientBinding binding) {
    std::shared_ptr<void> arena = host_arena(plan);
    ExecutableValues arguments(std::move(values), arena);
    if (arena) binding.bind_arena(plan, arena.get(), arguments.writable());
    arena_ = std::move(arena);
    arguments_ = std::move(arguments);
    transients_ = std::move(binding);
  }

  std::shared_ptr<const HostProgram> program_;
  bool portable_;  // CompileOptions::portable
  mutable std::mutex mutex_;
  std::shared_ptr<void> arena_;  // the transients' memory, if any
  ExecutableValues arguments_{nullptr};
  std::shared_ptr<HostProfileStore> profile_;
  std::shared_ptr<FenceState> last_;
};

}  // namespace

std::unique_ptr<ExecutableImpl> lower_to_host(std::shared_ptr<const Plan> plan,
                                              const CompileOptions& options, ExecutableStats stats) {
  stats.backend = Backend::host;
  check_runs_on_host(*plan, options.portable);
  return std::make_unique<HostExecutable>(make_program(std::move(plan)),
                                          std::move(stats), options.profile_every,
                                          options.portable);
}

}  // namespace cmdgraph::detail
