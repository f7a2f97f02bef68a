// HostLaunch: dependency counting, task execution per command kind, loops as launches of their
// body, error capture.
#include "backend/host/host_launch.hpp"

#include "error/task_failure.hpp"
#include "observe/nvtx.hpp"
#include "observe/profile_builder.hpp"
#include "sync/event_state.hpp"
#include "sync/thread_pool.hpp"

#include <cmdgraph/error.hpp>

#include <algorithm>
#include <cstring>

namespace cmdgraph::detail {
namespace {

void fill_host(const FillSpec& f) {
  auto* p = static_cast<unsigned char*>(f.dst.data);
  const std::size_t count = f.dst.bytes / f.element_size;
  switch (f.element_size) {
    case 1: std::memset(p, static_cast<int>(f.value), count); break;
    case 2: {
      const auto v = static_cast<std::uint16_t>(f.value);
      for (std::size_t i = 0; i < count; ++i) std::memcpy(p + 2 * i, &v, 2);
      break;
    }
    default:
      for (std::size_t i = 0; i < count; ++i) std::memcpy(p + 4 * i, &f.value, 4);
  }
}

// Chunks a parallel_for is split into: enough to keep every worker busy, none so small that
// handing it over costs more than running it.
std::size_t chunk_count(std::size_t n, std::size_t workers) {
  constexpr std::size_t min_chunk = 256;
  return std::clamp<std::size_t>(n / min_chunk, 1, 4 * workers);
}

}  // namespace

HostLaunch::HostLaunch(std::shared_ptr<const HostProgram> program,
                       std::shared_ptr<const ArgumentStore> arguments,
                       End end, std::function<void()> before_complete,
                       std::shared_ptr<HostProfileStore> profile)
    : program_(std::move(program)), arguments_(std::move(arguments)), end_(std::move(end)),
      before_complete_(std::move(before_complete)),
      profile_(std::move(profile)), pool_size_(host_pool().size()) {
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
    const NvtxRange range(program_->names[task]);
    const Outcome outcome = skip ? Outcome::failed : execute(task);
    if (outcome == Outcome::deferred) return;
    task = complete(task, outcome == Outcome::failed);
  }
}

const ArgumentStore& HostLaunch::arguments_of(const FlatTask& task) const {
  // The root plan's arguments are this executable's own (update() changes them); nested
  // buffers keep the arguments they were recorded with.
  return task.plan == program_->plan.get() ? *arguments_ : task.plan->recording->arguments();
}

HostLaunch::Outcome HostLaunch::execute(std::uint32_t task) {
  const FlatTask& t = program_->flat.tasks[task];
  if (t.is_join()) return Outcome::ok;
  const RecordedCommand& cmd = t.plan->command(t.command);
  switch (cmd.kind) {
    case CommandKind::parallel_for:
      return run_parallel_for(
          task, arguments_of(t).get<std::size_t>(std::get<ParallelForPayload>(cmd.payload).count()));
    case CommandKind::copy: {
      const auto& c = arguments_of(t).get<CopySpec>(std::get<CopyPayload>(cmd.payload).spec);
      std::memmove(c.dst.data, c.src.data, c.dst.bytes);
      return Outcome::ok;
    }
    case CommandKind::fill:
      fill_host(arguments_of(t).get<FillSpec>(std::get<FillPayload>(cmd.payload).spec));
      return Outcome::ok;
    case CommandKind::host:
      try {
        std::get<HostPayload>(cmd.payload).task->run();
        return Outcome::ok;
      } catch (...) {
        fail(task, "host task");
        return Outcome::failed;
      }
    case CommandKind::event_record:
      std::get<EventPayload>(cmd.payload).event->record_now();
      return Outcome::ok;
    case CommandKind::event_wait: {
      auto resume = [self = shared_from_this(), task] {
        host_pool().post([self, task] { self->resume_after(task, false); });
      };
      return std::get<EventPayload>(cmd.payload).event->recorded_or_defer(resume)
                 ? Outcome::ok
                 : Outcome::deferred;
    }
    case CommandKind::loop:
      return run_loop(task);
    case CommandKind::barrier:
    case CommandKind::nested:  // expanded into join tasks by flatten()
      return Outcome::ok;
    case CommandKind::kernel:
    case CommandKind::capture:
      break;  // refused by lower_to_host
  }
  return Outcome::failed;
}

HostLaunch::Outcome HostLaunch::run_parallel_for(std::uint32_t task, std::size_t count) {
  const std::size_t chunks = chunk_count(count, pool_size_);
  if (chunks == 1) {
    run_chunk(task, 0, count);
    return failed_[task].load(std::memory_order_acquire) ? Outcome::failed : Outcome::ok;
  }
  chunks_[task].store(static_cast<std::uint32_t>(chunks), std::memory_order_relaxed);
  const std::size_t step = (count + chunks - 1) / chunks;
  for (std::size_t k = 0; k < chunks; ++k) {
    const std::size_t begin = k * step, end = std::min(count, begin + step);
    auto body = [self = shared_from_this(), task, begin, end] {
      self->run_chunk(task, begin, end);
      if (self->chunks_[task].fetch_sub(1, std::memory_order_acq_rel) == 1) {
        self->resume_after(task, self->failed_[task].load(std::memory_order_acquire) != 0);
      }
    };
    host_pool().post(std::move(body));
  }
  return Outcome::deferred;
}

void HostLaunch::run_chunk(std::uint32_t task, std::size_t begin, std::size_t end) {
  const FlatTask& t = program_->flat.tasks[task];
  const auto& pf = std::get<ParallelForPayload>(t.plan->command(t.command).payload);
  try {
    pf.host(arguments_of(t).data(pf.functor), begin, end);
  } catch (...) {
    failed_[task].store(1, std::memory_order_release);
    fail(task, "parallel_for");
  }
}

HostLaunch::Outcome HostLaunch::run_loop(std::uint32_t task) {
  try {
    if (program_->loop_bodies[task]->flat.tasks.empty()) {
      while (loop_holds(task)) {
      }  // an empty body: nothing to run between the checks
      return Outcome::ok;
    }
    if (!loop_holds(task)) return Outcome::ok;
  } catch (...) {
    fail(task, "loop condition");
    return Outcome::failed;
  }
  start_pass(task);
  return Outcome::deferred;
}

bool HostLaunch::loop_holds(std::uint32_t task) const {
  const FlatTask& t = program_->flat.tasks[task];
  const auto& loop = std::get<LoopPayload>(t.plan->command(t.command).payload);
  return loop.host(arguments_of(t).data(loop.condition));
}

void HostLaunch::start_pass(std::uint32_t task) {
  try {
    const std::shared_ptr<const HostProgram>& body = program_->loop_bodies[task];
    const std::shared_ptr<const Recording>& recording = body->plan->recording;
    auto pass = std::make_shared<HostLaunch>(
        body, std::shared_ptr<const ArgumentStore>(recording, &recording->arguments()),
        [self = shared_from_this(), task](std::exception_ptr error) {
          self->after_pass(task, std::move(error));
        },
        nullptr, nullptr);
    pass->start();
  } catch (...) {
    keep_first_error(std::current_exception());
    resume_after(task, true);
  }
}

void HostLaunch::after_pass(std::uint32_t task, std::exception_ptr error) {
  if (error) {
    keep_first_error(std::move(error));
    resume_after(task, true);
    return;
  }
  bool again = false;
  try {
    again = loop_holds(task);
  } catch (...) {
    fail(task, "loop condition");
    resume_after(task, true);
    return;
  }
  if (again) {
    start_pass(task);
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
  keep_first_error(task_failure(what_ran, program_->names[task]));
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
  // Nested commands are join pairs around their contents: give them the span of the pair.
  for (std::uint32_t c = 0; c < program_->plan->size(); ++c) {
    if (program_->plan->command(c).kind != CommandKind::nested) continue;
    const std::uint32_t exit = flat.root_task[c];
    const std::uint32_t entry = flat.root_entry[c];
    measured.push_back({program_->plan.get(), c, MeasuredCommand::no_lane, start_ms_[entry],
                        end_ms_[exit]});
  }
  Profile p = build_profile(*program_->plan, std::move(measured), "host", started_);
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
