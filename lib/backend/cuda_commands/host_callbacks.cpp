// The host task trampoline and per-launch error filing.
#include "backend/cuda_commands/host_callbacks.hpp"

#include "error/task_failure.hpp"

#include <algorithm>
#include <chrono>

namespace cmdgraph::detail {

void HostErrors::record(std::uint64_t launch, std::exception_ptr error) {
  std::lock_guard lock(mutex_);
  errors_.emplace(launch, std::move(error));  // the first error of a launch wins
}

std::exception_ptr HostErrors::find(std::uint64_t launch) {
  std::lock_guard lock(mutex_);
  const auto it = errors_.find(launch);
  return it == errors_.end() ? nullptr : it->second;
}

std::exception_ptr HostErrors::find(std::uint64_t first, std::uint64_t last) {
  std::lock_guard lock(mutex_);
  const auto it = errors_.lower_bound(first);
  return it == errors_.end() || it->first > last ? nullptr : it->second;
}

void HostErrors::forget_before(std::uint64_t launch) {
  std::lock_guard lock(mutex_);
  errors_.erase(errors_.begin(), errors_.lower_bound(launch));
}

std::uint32_t count_host_tasks(const Plan& plan) {
  std::uint32_t n = 0;
  for (std::uint32_t c = 0; c < plan.size(); ++c) {
    if (host_task(plan.payload(c))) ++n;
    for (const auto& body : plan.bodies_of(c)) n += count_host_tasks(*body);
  }
  return n;
}

HostAncestors merged(const std::vector<HostAncestors>& sets) {
  HostAncestors widest;
  std::size_t total = 0;
  for (const HostAncestors& s : sets) {
    if (!s) continue;
    total += s->size();
    if (!widest || s->size() > widest->size()) widest = s;
  }
  if (!widest || total == widest->size()) return widest;
  auto all = std::make_shared<std::vector<HostCallback*>>();
  all->reserve(total);
  for (const HostAncestors& s : sets) {
    if (s) all->insert(all->end(), s->begin(), s->end());
  }
  std::sort(all->begin(), all->end());
  all->erase(std::unique(all->begin(), all->end()), all->end());
  if (all->size() == widest->size()) return widest;  // the others were part of it
  return all;
}

HostAncestors only(HostCallback* callback) {
  return std::make_shared<const std::vector<HostCallback*>>(1, callback);
}

namespace {
std::int64_t steady_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

void run_host_callback(void* p) {
  auto* callback = static_cast<HostCallback*>(p);
  const std::uint64_t launch = callback->errors->enter();
  if (callback->ancestors) {
    // The ancestors ran before this task (edges order them), so their marks are settled.
    for (const HostCallback* up : *callback->ancestors) {
      if (up->failed_in.load(std::memory_order_acquire) == launch) {
        callback->failed_in.store(launch, std::memory_order_release);
        return;  // a dependant of a failed host task is skipped
      }
    }
  }
  const bool timed = callback->times &&
                     callback->time_launch->load(std::memory_order_acquire) == launch;
  const auto started = timed ? steady_ns() : 0;
  try {
    callback->task->run();
  } catch (...) {
    callback->errors->record(launch, task_failure("host task", callback->name));
    callback->failed_in.store(launch, std::memory_order_release);
  }
  if (timed) {
    HostTimes& times = *callback->times;
    times.started_ns.store(started, std::memory_order_relaxed);
    times.ended_ns.store(steady_ns(), std::memory_order_relaxed);
    times.timed_in.store(launch, std::memory_order_release);
  }
}

HostCallback* HostCallbacks::add(std::shared_ptr<HostTask> task, std::string name,
                                 HostErrors* errors, HostAncestors ancestors) {
  auto callback = std::make_unique<HostCallback>();
  callback->task = std::move(task);
  callback->name = std::move(name);
  callback->errors = errors;
  callback->ancestors = std::move(ancestors);
  callbacks_.push_back(std::move(callback));
  return callbacks_.back().get();
}

}  // namespace cmdgraph::detail
