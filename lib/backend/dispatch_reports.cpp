// DispatchReports: a slot per indirect command, found by its plan and place.
#include "backend/dispatch_reports.hpp"

#include <atomic>
#include <cstring>
#include <stdexcept>

namespace cmdgraph::detail {

bool sized_on_device(const Plan& plan) {
  for (std::uint32_t c = 0; c < plan.size(); ++c) {
    if (traits(plan.kind(c)).sized_on_device) return true;
    for (const auto& body : plan.bodies_of(c)) {
      if (sized_on_device(*body)) return true;
    }
  }
  return false;
}

DispatchReports::DispatchReports(const Plan& root, const Allocate& allocate) {
  index(root, root);
  if (names_.empty()) return;
  const std::size_t bytes = names_.size() * sizeof(DispatchReport);
  memory_ = allocate(bytes);
  std::memset(memory_.get(), 0, bytes);
}

void DispatchReports::index(const Plan& plan, const Plan& root) {
  for (std::uint32_t c = 0; c < plan.size(); ++c) {
    const bool indirect = traits(plan.kind(c)).sized_on_device;
    if (indirect && slot_.emplace(std::pair(&plan, c), names_.size()).second) {
      names_.push_back(command_label(plan, c, root));
    }
    for (const auto& body : plan.bodies_of(c)) index(*body, root);
  }
}

DispatchReport* DispatchReports::at(const Plan& plan, std::uint32_t c) const {
  const auto it = slot_.find({&plan, c});
  if (it == slot_.end()) throw std::logic_error("cmdgraph: no report for a command");
  return static_cast<DispatchReport*>(memory_.get()) + it->second;
}

void DispatchReports::note(const Plan& plan, std::uint32_t c, std::uint64_t asked,
                           bool clamped) const {
  // A body run twice at once (executed by two branches) reports from two threads.
  DispatchReport& r = *at(plan, c);
  if (clamped) std::atomic_ref(r.clamped).fetch_add(1, std::memory_order_relaxed);
  std::atomic_ref largest(r.largest);
  std::uint64_t seen = largest.load(std::memory_order_relaxed);
  while (asked > seen && !largest.compare_exchange_weak(seen, asked, std::memory_order_relaxed)) {
  }
}

std::vector<ClampedDispatch> DispatchReports::clamped() const {
  std::vector<ClampedDispatch> out;
  const auto* reports = static_cast<DispatchReport*>(memory_.get());
  for (std::size_t i = 0; i < names_.size(); ++i) {
    const std::uint64_t times = std::atomic_ref(reports[i].clamped).load(std::memory_order_acquire);
    if (times == 0) continue;
    out.push_back({names_[i], times,
                   std::atomic_ref(reports[i].largest).load(std::memory_order_acquire)});
  }
  return out;
}

}  // namespace cmdgraph::detail
