// HostLaunch: dependency counting, running tasks (each kind's run is in host_commands.cpp),
// parallel_for in chunks, conditional commands as launches of their bodies, events, error
// capture.
#include "backend/host/host_launch.hpp"

#include "error/task_failure.hpp"
#include "observe/nvtx.hpp"
#include "observe/profile_builder.hpp"
#include "sync/event_state.hpp"
#include "sync/thread_pool.hpp"
#include "sync/watcher.hpp"

#include <cmdgraph/error.hpp>

#include <algorithm>
#include <variant>

namespace cmdgraph::detail {
namespace {

// Chunks a parallel_for is split into: enough to keep every worker busy, none so small that
// handing it over costs more than running it.
std::size_t chunk_count(std::size_t n, std::size_t workers) {
  constexpr std::size_t min_chunk = 256;
  return std::clamp<std::size_t>(n / min_chunk, 1, 4 * workers);
}

}  // namespace

HostLaunch::HostLaunch(std::shared_ptr<const HostProgram> program,
                       std::shared_ptr<const ArgumentStore> arguments,
                       EventGenerations generations, End end,
                       std::function<void()> before_complete,
                       std::shared_ptr<HostProfileStore> profile, std::uint64_t index)
    : program_(std::move(program)), arguments_(std::move(arguments)),
      generations_(std::move(generations)), end_(std::move(end)),
      before_complete_(std::move(before_complete)),
      profile_(std::move(profile)), index_(index), pool_size_(host_pool().size()) {
  const std::size_t n = program_->flat.tasks.size();
  pending_.reset(new std::atomic<std::uint32_t>[n]);
  poisoned_.reset(new std::atomic<std::uint8_t>[n]);
  chunks_.reset(new std::atomic<std::uint32_t>[n]);
  failed_.reset(new std::atomic<std::uint8_t>[n]);
  for (std::size_t t = 0; t < n; ++t) {
    pending_[t].store(static_cast<std::uint32_t>(program_->flat.parents[t].size()),
                      std::memory_order_relaxed);
    poisoned_[t].store(0, std::memory_order_relaxed);
    failed_[t].store(0, std::memory_order_relaxed);
  }
  remaining_.store(n, std::memory_order_relaxed);
  if (profile_) {
    start_ms_.reset(new double[n]());
    end_ms_.reset(new double[n]());
  }
}

void HostLaunch::start() {
  started_ = std::chrono::steady_clock::now();
  if (program_->flat.tasks.empty()) {
    finish();
    return;
  }
  for (std::uint32_t s : program_->flat.sources) post(s);
}

void HostLaunch::post(std::uint32_t task) {
  host_pool().post([self = shared_from_this(), task] { self->run(task); });
}

void HostLaunch::run(std::uint32_t task) {
  while (task != none) {
    const bool skip = poisoned_[task].load(std::memory_order_acquire) != 0;
    if (profile_) {
      start_ms_[task] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started_).count();
    }
    HostOutcome outcome = HostOutcome::failed;
    {
      // Closed before completing: the last completion ends the launch, and nothing of it may
      // outlast the fence it signals.
      const NvtxRange range((*program_->labels)[task]);
      if (skip) {
        end_skipped_record(task);
      } else {
        outcome = execute(task);
      }
    }
    if (outcome == HostOutcome::deferred) return;
    task = complete(task, outcome == HostOutcome::failed);
  }
}

const ArgumentStore& HostLaunch::arguments_of(const FlatTask& task) const {
  // The root plan's arguments are this executable's own (update() changes them); nested
  // buffers keep the arguments they were recorded with.
  return task.plan == program_->plan.get() ? *arguments_ : task.plan->arguments();
}

HostOutcome HostLaunch::execute(std::uint32_t task) {
  const FlatTask& t = program_->flat.tasks[task];
  if (t.is_join()) return HostOutcome::ok;
  return run_on_host(t.plan->payload(t.command), *this, task, arguments_of(t));
}

void HostLaunch::record_event(std::uint32_t task, EventState& event) {
  if (generations_.empty()) {
    event.record_now();
  } else {
    event.finish_record(generations_[task]);
  }
}

void HostLaunch::end_skipped_record(std::uint32_t task) {
  // A loop's pass begins no generation before it runs: a record it skips leaves none behind.
  if (generations_.empty()) return;
  const FlatTask& t = program_->flat.tasks[task];
  if (t.is_join()) return;
  if (const auto event = recorded_event(t.plan->payload(t.command))) {
    event->finish_record(generations_[task]);
  }
}

HostOutcome HostLaunch::wait_for_event(std::uint32_t task, EventState& event) {
  auto resume = [self = shared_from_this(), task] {
    host_pool().post([self, task] { self->resume_after(task, false); });
  };
  const std::uint64_t target = generations_.empty() ? event.latest_begun() : generations_[task];
  return event.finished_or_defer(target, resume) ? HostOutcome::ok : HostOutcome::deferred;
}

HostOutcome HostLaunch::wait_until(std::uint32_t task, std::function<bool()> ready) {
  if (ready()) return HostOutcome::ok;
  Watcher::instance().watch([self = shared_from_this(), task, ready = std::move(ready)] {
    if (!ready()) return false;
    host_pool().post([self, task] { self->resume_after(task, false); });
    return true;
  });
  return HostOutcome::deferred;
}

HostOutcome HostLaunch::run_parallel_for(std::uint32_t task, HostInvoke host,
                                         ArgumentStore::Slot functor, std::size_t count) {
  const std::size_t chunks = chunk_count(count, pool_size_);
  if (chunks == 1) {
    run_chunk(task, host, functor, 0, count);
    return failed_[task].load(std::memory_order_acquire) ? HostOutcome::failed : HostOutcome::ok;
  }
  chunks_[task].store(static_cast<std::uint32_t>(chunks), std::memory_order_relaxed);
  const std::size_t step = (count + chunks - 1) / chunks;
  for (std::size_t k = 0; k < chunks; ++k) {
    const std::size_t begin = k * step, end = std::min(count, begin + step);
    auto body = [self = shared_from_this(), task, host, functor, begin, end] {
      self->run_chunk(task, host, functor, begin, end);
      if (self->chunks_[task].fetch_sub(1, std::memory_order_acq_rel) == 1) {
        self->resume_after(task, self->failed_[task].load(std::memory_order_acquire) != 0);
      }
    };
    host_pool().post(std::move(body));
  }
  return HostOutcome::deferred;
}

void HostLaunch::note_dispatch(std::uint32_t task, std::uint64_t asked, bool clamped) const {
  const FlatTask& t = program_->flat.tasks[task];
  program_->reports->note(*t.plan, t.command, asked, clamped);
}

void HostLaunch::run_chunk(std::uint32_t task, HostInvoke host, ArgumentStore::Slot functor,
                           std::size_t begin, std::size_t end) {
  try {
    host(arguments_of(program_->flat.tasks[task]).data(functor), begin, end);
  } catch (...) {
    failed_[task].store(1, std::memory_order_release);
    fail(task, "parallel_for");
  }
}

HostOutcome HostLaunch::run_conditional(std::uint32_t task, const Condition& condition,
                                        Branching branching) {
  std::optional<std::uint32_t> body;
  try {
    body = choose(task, condition, branching);
    // An empty body: nothing to run between the checks.
    while (body && program_->bodies[task][*body]->flat.tasks.empty()) {
      body = branching == Branching::repeat ? choose(task, condition, branching) : std::nullopt;
    }
  } catch (...) {
    fail(task, "condition");
    return HostOutcome::failed;
  }
  if (!body) return HostOutcome::ok;
  start_pass(task, *body, condition, branching);
  return HostOutcome::deferred;
}

std::optional<std::uint32_t> HostLaunch::choose(std::uint32_t task, const Condition& condition,
                                                Branching branching) const {
  const std::uint32_t value =
      condition.host(arguments_of(program_->flat.tasks[task]).data(condition.functor));
  return chosen_body(branching, value, program_->bodies[task].size());
}

void HostLaunch::start_pass(std::uint32_t task, std::uint32_t body, const Condition& condition,
                            Branching branching) {
  try {
    const std::shared_ptr<const HostProgram>& program = program_->bodies[task][body];
    const std::shared_ptr<const Plan>& plan = program->plan;
    auto pass = std::make_shared<HostLaunch>(
        program, plan->values, EventGenerations{},
        [self = shared_from_this(), task, &condition, branching](std::exception_ptr error) {
          self->after_pass(task, condition, branching, std::move(error));
        },
        nullptr, nullptr);
    pass->start();
  } catch (...) {
    keep_first_error(std::current_exception());
    resume_after(task, true);
  }
}

void HostLaunch::after_pass(std::uint32_t task, const Condition& condition, Branching branching,
                            std::exception_ptr error) {
  if (error) {
    keep_first_error(std::move(error));
    resume_after(task, true);
    return;
  }
  if (branching != Branching::repeat) {
    resume_after(task, false);
    return;
  }
  // A loop's body is never empty here (run_conditional spins on empty ones).
  std::optional<std::uint32_t> again;
  try {
    again = choose(task, condition, branching);
  } catch (...) {
    fail(task, "condition");
    resume_after(task, true);
    return;
  }
  if (again) {
    start_pass(task, *again, condition, branching);
  } else {
    resume_after(task, false);
  }
}

void HostLaunch::resume_after(std::uint32_t task, bool failed) { run(complete(task, failed)); }

std::uint32_t HostLaunch::complete(std::uint32_t task, bool failed) {
  if (profile_) {
    end_ms_[task] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started_).count();
  }
  std::uint32_t next = none;
  for (std::uint32_t c : program_->flat.children[task]) {
    if (failed) poisoned_[c].store(1, std::memory_order_relaxed);
    if (pending_[c].fetch_sub(1, std::memory_order_acq_rel) == 1) {
      if (next == none) {
        next = c;
      } else {
        post(c);
      }
    }
  }
  if (remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1) finish();
  return next;
}

void HostLaunch::fail(std::uint32_t task, const char* what_ran) {
  keep_first_error(task_failure(what_ran, (*program_->labels)[task]));
}

void HostLaunch::keep_first_error(std::exception_ptr error) {
  std::lock_guard lock(error_mutex_);
  if (!error_) error_ = std::move(error);
}

void HostLaunch::store_profile() {
  std::vector<MeasuredCommand> measured;
  const FlatPlan& flat = program_->flat;
  for (std::uint32_t t = 0; t < flat.tasks.size(); ++t) {
    const FlatTask& task = flat.tasks[t];
    if (task.is_join()) continue;
    // A parallel_for spreads over workers and a worker moves on while it runs: pack lanes
    // by time rather than by the worker that started a command.
    measured.push_back({task.plan, task.command, MeasuredCommand::no_lane, start_ms_[t], end_ms_[t]});
  }
  // Executed buffers' commands are join pairs around their contents: the span of the pair.
  for (const NestedSpan& n : flat.nested) {
    measured.push_back({n.plan, n.command, MeasuredCommand::no_lane, start_ms_[n.entry],
                        end_ms_[n.exit]});
  }
  Profile p = build_profile(*program_->plan, std::move(measured), "host", started_);
  p.launch = index_;
  p.timing = "host_clock";
  std::lock_guard lock(profile_->mutex);
  profile_->last = std::move(p);
}

void HostLaunch::finish() {
  std::exception_ptr error;
  {
    std::lock_guard lock(error_mutex_);
    error = error_;
  }
  if (profile_) store_profile();
  if (before_complete_) before_complete_();
  end_(error);
}

}  // namespace cmdgraph::detail
