// Executable's updates: find the command and hand its new values to its kind's update hook
// (command/kind_hooks.cpp), through a site that checks against, writes into and applies to this
// executable.
#include "backend/executable_impl.hpp"
#include "command/update_site.hpp"
#include "plan/hazards.hpp"
#include "plan/new_values.hpp"
#include "plan/plan.hpp"
#include "record/recording.hpp"

#include <cmdgraph/command_buffer.hpp>
#include <cmdgraph/config.hpp>
#include <cmdgraph/error.hpp>

#include <boost/container/small_vector.hpp>

#include <algorithm>
#include <chrono>


namespace cmdgraph {
namespace {

using detail::ExecutableImpl;

// The root command `ref` names in `exe`, checked to be of `kind`.
std::uint32_t locate(const ExecutableImpl& exe, detail::CommandRef ref, CommandKind kind) {
  if (ref.recording == 0) {
    throw Error(errc::invalid_handle, "update of executable '" + exe.name() +
                                          "' with a default-constructed or moved-from handle");
  }
  const detail::Plan& plan = exe.plan();
  if (ref.recording != plan.recording_id || ref.index >= plan.size()) {
    const std::string name = detail::describe_handle(ref);
    throw Error(errc::foreign_handle,
                "command '" + name + "' is not a command of executable '" + exe.name() +
                    "' (only commands of the buffer it was compiled from or last updated with "
                    "can be updated)",
                {name});
  }
  if (plan.kind(ref.index) != kind) {
    throw Error(errc::invalid_argument, "command '" + plan.name(ref.index) + "' is a " +
                                            to_string(plan.kind(ref.index)) + ", not a " +
                                            to_string(kind),
                {plan.name(ref.index)});
  }
  return ref.index;
}

// What an update hook checks and writes through: root command `c` of `exe`. An update of a
// handle is a frame's per-command cost, so nothing here allocates in the common case.
class ExecutableSite final : public detail::UpdateSite {
 public:
  ExecutableSite(ExecutableImpl& exe, std::uint32_t c) : exe_(exe), c_(c) {}

  const detail::ArgumentStore& values() const override { return exe_.arguments_for_update(); }
  void require(const std::string& problem) const override {
    if (problem.empty()) return;
    throw Error(errc::invalid_argument, "update of command '" + name() + "': " + problem,
                {name()});
  }
  void require_reachable(const detail::MemoryRange& range) const override {
    exe_.check_memory(c_, range);
  }
  void require_access(std::vector<detail::MemoryAccess> access) const override {
    detail::check_changed_access(exe_.plan(), c_, std::move(access));
  }
  void require_transient_fit(const void* data, std::size_t bytes) const override {
    exe_.check_transient_value(c_, data, bytes,
                               [this] { return "update of command '" + name() + "'"; });
  }
  void write(detail::ArgumentStore::Slot slot, const void* value) override {
    detail::ArgumentStore& args = exe_.arguments_for_update();
    const auto* old = static_cast<const std::byte*>(args.data(slot));
    written_.push_back({slot, saved_.size()});
    saved_.insert(saved_.end(), old, old + args.size(slot));
    args.assign(slot, value);
    exe_.rebind_transients(slot, 1);
  }
  void apply() override {
    try {
      exe_.apply_update(c_);
    } catch (...) {
      // Nothing changes when the backend cannot take the values: the next launches keep the
      // old ones, given back to whatever part of the backend took the new ones already.
      detail::ArgumentStore& args = exe_.arguments_for_update();
      for (auto it = written_.rbegin(); it != written_.rend(); ++it) {
        args.assign(it->slot, saved_.data() + it->at);
        exe_.rebind_transients(it->slot, 1);
      }
      try {
        exe_.apply_update(c_);
      } catch (...) {  // the first failure is the one to report
      }
      throw;
    }
  }
  void refuse(const std::string& why, int cuda_status) const override {
    throw Error(errc::update_refused,
                "executable '" + exe_.name() + "' cannot take the update of command '" + name() +
                    "' in place: " + why,
                {name()}, cuda_status);
  }

 private:
  struct Written {
    detail::ArgumentStore::Slot slot;
    std::size_t at;  // where saved_ holds what the slot held before
  };
  // Named only when refused: a default name is made when asked for.
  std::string name() const { return exe_.plan().name(c_); }

  ExecutableImpl& exe_;
  std::uint32_t c_;
  boost::container::small_vector<Written, 8> written_;
  boost::container::small_vector<std::byte, 256> saved_;
};

void update_command(ExecutableImpl& exe, detail::CommandRef command, CommandKind kind,
                    const detail::CommandValues& values) {
  const ExecutableImpl::Updating updating(exe);
  const std::uint32_t c = locate(exe, command, kind);
  ExecutableSite site(exe, c);
  detail::update_command(exe.plan().payload(c), site, values);
}

[[noreturn]] void reject_value(const ExecutableImpl& exe, detail::CommandRef command,
                               CommandKind kind, const detail::Misfit& misfit) {
  const std::string name = exe.plan().name(locate(exe, command, kind));
  throw Error(errc::invalid_argument, "update of command '" + name + "': " + misfit.message(),
              {name});
}

// Whether `command` names a command of `exe`'s plan (else locate refuses it).
bool knows(const ExecutableImpl& exe, detail::CommandRef command) {
  return command.recording == exe.plan().recording_id && command.index < exe.plan().size();
}

}  // namespace

void Executable::update_command(detail::CommandRef command, CommandKind kind,
                                const detail::CommandValues& values) {
  cmdgraph::update_command(impl(), command, kind, values);
}

void Executable::reject_value(detail::CommandRef command, CommandKind kind,
                              const detail::Misfit& misfit) {
  cmdgraph::reject_value(impl(), command, kind, misfit);
}

detail::WriterTarget Executable::writable(detail::CommandRef command, CommandKind kind,
                                          const std::type_info& signature) {
  ExecutableImpl& exe = impl();
  const std::uint32_t c = locate(exe, command, kind);
  const std::optional<detail::KernelSlots> kernel = detail::kernel_slots(exe.plan().payload(c));
  if (!kernel || *kernel->signature != signature) {
    const std::string name = exe.plan().name(c);
    throw Error(errc::invalid_argument,
                "command '" + name + "' does not run a kernel of the handle's signature", {name});
  }
  return {&exe, exe.liveness()};
}

UpdateFrame Executable::update_frame() {
  ExecutableImpl& exe = impl();
  exe.open_frame();
  return UpdateFrame({&exe, exe.liveness()});
}

namespace detail {

void close_update_frame(ExecutableImpl& exe) noexcept { exe.close_frame(); }

void write_arguments(ExecutableImpl& exe, CommandRef command, const KernelArguments& arguments,
                     FrameSlotBase& slot, std::span<std::uint32_t> offsets) {
  const bool known = knows(exe, command);
  if (known && exe.write_in_frame(command.index, arguments, slot, offsets)) return;
  {
    const ExecutableImpl::Updating updating(exe);
    if (known && exe.write_arguments(command.index, arguments)) return;
  }
  // Checked and written as update() does; a handle the executable no longer knows is refused
  // there (locate), as an update by it would be.
  cmdgraph::update_command(exe, command, known ? exe.plan().kind(command.index) : CommandKind{},
                           CommandValues::of(arguments));
}

void reject_writer_of_destroyed() {
  throw Error(errc::invalid_handle, "an ArgumentWriter of an executable since destroyed was used");
}

void reject_arguments(ExecutableImpl& exe, CommandRef command, const Misfit& misfit) {
  const CommandKind kind = knows(exe, command) ? exe.plan().kind(command.index) : CommandKind{};
  cmdgraph::reject_value(exe, command, kind, misfit);
}

}  // namespace detail

UpdateResult Executable::update(CommandBuffer& rerecorded, const UpdateOptions& options) {
  ExecutableImpl& exe = impl();
  const ExecutableImpl::Updating updating(exe);
  const std::shared_ptr<detail::Recording>& rec = detail::recording_of(rerecorded);
  const detail::Recording::UseGuard guard(*rec);
  // A frame whose values alone changed skips the plan's analysis: it reuses the executable's.
  UpdateResult result;
  if (detail::NewValues values = detail::plan_of_new_values(exe.plan(), *rec); values.plan) {
    result = exe.update_values_from(std::move(values), options);
  } else {
    result = exe.update_from(
        detail::build_plan(*rec, {exe.plan().hazards.requested, exe.plan().shape}), options);
  }
  rec->seal();
  return result;
}

}  // namespace cmdgraph
