// ExecutableImpl's skeleton: update by re-recording, the profile guard, recorded events.
#include "backend/executable_impl.hpp"

#include "command/transient_range.hpp"
#include "plan/hazards.hpp"

#include <cmdgraph/error.hpp>

#include <algorithm>
#include <cstddef>
#include <vector>

namespace cmdgraph::detail {
namespace {

void collect_recorded_events(const Plan& plan, std::vector<std::shared_ptr<EventState>>& out) {
  for (std::uint32_t c = 0; c < plan.size(); ++c) {
    if (auto event = recorded_event(plan.payload(c))) out.push_back(std::move(event));
    for (const auto& body : plan.bodies_of(c)) collect_recorded_events(*body, out);
  }
}

std::size_t count_unneeded_edges(const Plan& plan) {
  std::size_t count = unneeded_edges(plan).size();
  for (std::uint32_t c = 0; c < plan.size(); ++c) {
    for (const auto& body : plan.bodies_of(c)) count += count_unneeded_edges(*body);
  }
  return count;
}

std::vector<std::shared_ptr<EventState>> events_recorded_by(const Plan& plan) {
  std::vector<std::shared_ptr<EventState>> events;
  collect_recorded_events(plan, events);
  return events;
}

}  // namespace

ExecutableImpl::ExecutableImpl(std::shared_ptr<const Plan> plan, Device device,
                               ExecutableStats stats, unsigned profile_every)
    : plan_(std::move(plan)), name_(plan_->buffer_name), device_(device),
      stats_(std::move(stats)), profile_every_(std::max(1u, profile_every)),
      recorded_events_(events_recorded_by(*plan_)) {
  frame_words_.live_transients = &live_transient_count();
}

const ExecutableStats& ExecutableImpl::stats_with_lint() const {
  std::lock_guard lock(lint_mutex_);
  if (!lint_counted_) {
    stats_.edges_unneeded = count_unneeded_edges(*plan_);
    lint_counted_ = true;
  }
  return stats_;
}

ExecutableStats ExecutableImpl::stats_for_clone() const {
  std::lock_guard lock(lint_mutex_);
  return stats_;
}

ExecutableImpl::LaunchNumber ExecutableImpl::number_launch() noexcept {
  const std::uint64_t index = launch_count_.fetch_add(1, std::memory_order_relaxed);
  return {index, profiling() && index % profile_every_ == 0};
}

ExecutableImpl::Sharing::Sharing(const ExecutableImpl& exe) : exe_(exe) {
  int users = exe_.users_.load();
  do {
    if (users == framed) {
      throw Error(errc::concurrent_use,
                  "executable '" + exe_.name() + "' is launched or cloned while an update " +
                      "frame of it is open (Executable::update_frame): close the frame first");
    }
    if (users < 0) {
      throw Error(errc::concurrent_use, "executable '" + exe_.name() +
                                            "' is launched while another thread updates it");
    }
  } while (!exe_.users_.compare_exchange_weak(users, users + 1));
}

ExecutableImpl::Updating::Updating(ExecutableImpl& exe) : exe_(exe) {
  if (!exe_.frame_held_here()) {
    int idle = 0;
    if (!exe_.users_.compare_exchange_strong(idle, updating)) exe_.refuse_update_while(idle);
    held_ = true;
  }
  exe_.forget_frame_writes();  // this update may move what they write into: asked again
}

void ExecutableImpl::forget_frame_writes() noexcept {
  frame_writes_asked_ = false;
  frame_words_.key.store(0, std::memory_order_relaxed);
}

void ExecutableImpl::refuse_update_while(int users) const {
  throw Error(errc::concurrent_use,
              "executable '" + name_ + "' is updated while another thread " +
                  (users == framed ? "holds an update frame of it open"
                                   : users < 0 ? "updates" : "launches") +
                  " it");
}

void ExecutableImpl::open_frame() {
  if (frame_held_here()) {
    throw Error(errc::wrong_state, "an update frame of executable '" + name_ +
                                       "' was opened while this thread holds one open");
  }
  int idle = 0;
  if (!users_.compare_exchange_strong(idle, updating)) refuse_update_while(idle);
  frame_words_.owner.store(std::this_thread::get_id(), std::memory_order_relaxed);
  users_.store(framed, std::memory_order_release);
}

FrameWrites* ExecutableImpl::ask_frame_writes() {
  frame_writes_ = frame_writes();  // may move what they write into (frame_values_moved)
  frame_writes_asked_ = true;
  frame_words_.key.store(frame_writes_ ? frame_epoch_ : 0, std::memory_order_relaxed);
  return frame_writes_;
}

void ExecutableImpl::close_frame() noexcept {
  frame_writes_asked_ = false;
  frame_words_.key.store(0, std::memory_order_relaxed);
  frame_words_.owner.store(std::thread::id{}, std::memory_order_relaxed);
  users_.store(0, std::memory_order_release);
}

UpdateResult ExecutableImpl::update_from(std::shared_ptr<const Plan> plan,
                                         const UpdateOptions& options) {
  ++frame_epoch_;  // writers' handles may name none of its commands; it may rebuild
  const Difference difference = structural_difference(*plan_, *plan);
  if (!difference) {
    if (const auto changes = changed_values(*plan_, current_values(), *plan)) {
      check_changed(*plan, changes->top, changes->bodies);
      return take_changed(std::move(plan), &changes->top, changes->bodies, options);
    }
    check_runs(*plan);
    return take_changed(std::move(plan), nullptr, {}, options);
  }
  check_runs(*plan);
  if (!options.reinstantiate_if_needed) refuse_update(difference.what, {difference.command});
  const std::size_t commands = plan->size();
  UpdateResult result = take(std::move(plan), difference, options);
  result.commands_changed = commands;
  return result;
}

UpdateResult ExecutableImpl::update_values_from(NewValues values, const UpdateOptions& options) {
  ++frame_epoch_;  // as in update_from
  const auto top = commands_with_new_values(current_values(), *values.plan);
  if (top) {
    check_changed(*values.plan, *top, values.bodies);
  } else {
    check_runs(*values.plan);
  }
  return take_changed(std::move(values.plan), top ? &*top : nullptr, values.bodies, options);
}

void ExecutableImpl::check_changed(const Plan& plan, std::span<const std::uint32_t> top,
                                   const BodyChanges& bodies) const {
  // An unchanged command was checked with its values already, in a plan of this structure: a
  // frame costs what changed.
  check_values(plan, top, plan);
  for (const auto& [ran_now, commands] : bodies) check_values(*ran_now.second, commands, plan);
}

UpdateResult ExecutableImpl::take_changed(std::shared_ptr<const Plan> plan,
                                          const std::vector<std::uint32_t>* top,
                                          const BodyChanges& bodies,
                                          const UpdateOptions& options) {
  const std::size_t in_bodies = commands_in(bodies);
  if (top && take_values(plan, *top, bodies)) return {false, {}, top->size() + in_bodies};
  // New values the backend does not set one by one (in bodies it builds as a whole), or more
  // than values: it takes the plan, of this structure, in place.
  const std::size_t changed = (top ? top->size() : plan->size()) + in_bodies;
  UpdateResult result = take(std::move(plan), {}, options);
  result.commands_changed = changed;
  return result;
}

bool ExecutableImpl::take_values(std::shared_ptr<const Plan> plan,
                                 const std::vector<std::uint32_t>& changed,
                                 const BodyChanges& bodies) {
  if (!bodies.empty() && !take_body_values(*plan_, *plan, bodies)) return false;
  ArgumentStore& args = arguments_for_update();
  const ArgumentStore& next = plan->arguments();
  auto first_slot = [&plan](std::uint32_t c) {
    return c == 0 ? ArgumentStore::Slot{0} : plan->command(c - 1).slots_end;
  };
  std::vector<std::byte> saved;  // what the changed commands held, to give back on a refusal
  for (std::uint32_t c : changed) {
    const auto held = args.bytes_of(first_slot(c), plan->command(c).slots_end);
    saved.insert(saved.end(), held.begin(), held.end());
    args.assign(next, first_slot(c), plan->command(c).slots_end);
  }
  std::size_t applied = 0;
  try {
    for (; applied < changed.size(); ++applied) apply_update(changed[applied]);
  } catch (const Error&) {
    // The whole path decides (it may rebuild, or refuse naming the command); first every
    // command set so far, and the one refused, takes its old values again.
    std::size_t at = 0;
    for (std::uint32_t c : changed) {
      const auto held = args.bytes_of(first_slot(c), plan->command(c).slots_end);
      std::copy_n(saved.data() + at, held.size(), held.begin());
      at += held.size();
    }
    for (std::size_t i = 0; i <= applied; ++i) {
      try {
        apply_update(changed[i]);
      } catch (const Error&) {  // refused again: it never took the new values
      }
    }
    if (!bodies.empty()) {
      try {
        take_body_values(*plan, *plan_, reversed(bodies));
      } catch (const Error&) {  // the whole path takes the new values, or rebuilds
      }
    }
    return false;
  }
  // The same commands and events: only the plan moves on (names, handles, declared access).
  if (!lowered_) lowered_ = plan_;
  plan_ = std::move(plan);
  return true;
}

void ExecutableImpl::refuse_update(const std::string& why, std::vector<std::string> commands,
                                   int cuda_status) const {
  throw Error(errc::update_refused,
              "executable '" + name() + "' cannot take the update in place: " + why,
              std::move(commands), cuda_status);
}

Profile ExecutableImpl::last_profile() const {
  if (!profiling()) {
    throw Error(errc::wrong_state, "executable '" + name() +
                                       "' was compiled without CompileOptions{.profile = true}");
  }
  std::optional<Profile> profile = read_last_profile();
  if (!profile) {
    throw Error(errc::wrong_state, "executable '" + name() + "' has not been launched yet");
  }
  return std::move(*profile);
}

void ExecutableImpl::write_cuda_dot(const std::string&) const {
  throw Error(errc::unsupported, "executable '" + name() + "' runs on the " +
                                     to_string(stats().backend) +
                                     " backend; CUDA's DOT exists for the cuda_graph backend only");
}

void* ExecutableImpl::device_graph(const std::shared_ptr<QueueState>&) {
  throw Error(errc::wrong_state, "executable '" + name() + "' was not compiled for device "
                                 "launch (CompileOptions::device_launch)");
}

void ExecutableImpl::replace_plan(std::shared_ptr<const Plan> plan) {
  recorded_events_ = events_recorded_by(*plan);
  plan_ = std::move(plan);
  lowered_.reset();
}

}  // namespace cmdgraph::detail
