// The host task trampoline and per-launch error filing.
#include "backend/cuda_launch/host_callbacks.hpp"

#include "error/task_failure.hpp"

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
    if (std::holds_alternative<HostPayload>(plan.payload(c))) ++n;
    if (const Plan* body = plan.body(c)) n += count_host_tasks(*body);
  }
  return n;
}

void run_host_callback(void* p) {
  auto* callback = static_cast<HostCallback*>(p);
  const std::uint64_t launch = callback->errors->enter();
  try {
    callback->task->run();
  } catch (...) {
    callback->errors->record(launch, task_failure("host task", callback->name));
  }
}

HostCallback* HostCallbacks::add(std::shared_ptr<HostTask> task, std::string name,
                                 HostErrors* errors) {
  callbacks_.push_back(std::make_unique<HostCallback>(HostCallback{std::move(task), std::move(name), errors}));
  return callbacks_.back().get();
}

}  // namespace cmdgraph::detail
