// Executable's updates: find the command, check the new values, write them, let the backend
// apply them.
#include "plan/plan.hpp"
#include "record/validate.hpp"
#include "backend/executable_impl.hpp"

#include <cmdgraph/command_buffer.hpp>
#include <cmdgraph/error.hpp>

#include <chrono>

namespace cmdgraph {
namespace {

using detail::ExecutableImpl;

// The root command `ref` names in `exe`, checked to be of kind `kind`.
std::uint32_t locate(const ExecutableImpl& exe, detail::CommandRef ref, CommandKind kind) {
  if (ref.recording == 0) {
    throw Error(errc::invalid_handle, "update of executable '" + exe.name() +
                                          "' with a default-constructed or moved-from handle");
  }
  const detail::Plan& plan = exe.plan();
  if (ref.recording != plan.recording->id() || ref.index >= plan.size()) {
    throw Error(errc::foreign_handle,
                "command #" + std::to_string(ref.index) + " is not a command of executable '" +
                    exe.name() + "' (only commands of the buffer it was compiled from or last "
                    "updated with can be updated)");
  }
  if (plan.command(ref.index).kind != kind) {
    throw Error(errc::invalid_argument, "command '" + plan.name(ref.index) + "' is a " +
                                            to_string(plan.command(ref.index).kind) + ", not a " +
                                            to_string(kind),
                {plan.name(ref.index)});
  }
  return ref.index;
}

void require(const ExecutableImpl& exe, std::uint32_t c, const std::string& problem) {
  if (!problem.empty()) {
    const std::string name = exe.plan().name(c);
    throw Error(errc::invalid_argument, "update of command '" + name + "': " + problem, {name});
  }
}

}  // namespace

void Executable::update_kernel_arguments(detail::CommandRef command,
                                         const detail::KernelParam* params, std::size_t count) {
  ExecutableImpl& exe = impl();
  const std::uint32_t c = locate(exe, command, CommandKind::kernel);
  const auto& k = std::get<detail::KernelPayload>(exe.plan().command(c).payload);
  detail::ArgumentStore& args = exe.arguments_for_update();
  for (std::size_t i = 0; i < count && i < k.param_count; ++i) {
    args.assign(k.first_param + static_cast<std::uint32_t>(i), params[i].value);
  }
  exe.apply_update(c);
}

void Executable::update_launch_config(detail::CommandRef command, const LaunchConfig& config) {
  ExecutableImpl& exe = impl();
  const std::uint32_t c = locate(exe, command, CommandKind::kernel);
  require(exe, c, detail::problem_with(config));
  const auto& k = std::get<detail::KernelPayload>(exe.plan().command(c).payload);
  exe.arguments_for_update().assign(k.config, &config);
  exe.apply_update(c);
}

void Executable::update_parallel_for(detail::CommandRef command,
                                     const detail::KernelParam& functor,
                                     const std::size_t* count) {
  ExecutableImpl& exe = impl();
  const std::uint32_t c = locate(exe, command, CommandKind::parallel_for);
  if (count && *count == 0) require(exe, c, "zero-size range");
  const auto& pf = std::get<detail::ParallelForPayload>(exe.plan().command(c).payload);
  detail::ArgumentStore& args = exe.arguments_for_update();
  args.assign(pf.functor, functor.value);
  if (count) args.assign(pf.count(), count);
  exe.apply_update(c);
}

void Executable::update_copy(detail::CommandRef command, const detail::CopySpec& spec) {
  ExecutableImpl& exe = impl();
  const std::uint32_t c = locate(exe, command, CommandKind::copy);
  require(exe, c, detail::problem_with(spec));
  exe.check_memory(c, spec.dst);
  exe.check_memory(c, spec.src);
  exe.arguments_for_update().assign(std::get<detail::CopyPayload>(exe.plan().command(c).payload).spec,
                                    &spec);
  exe.apply_update(c);
}

void Executable::update_fill(detail::CommandRef command, const detail::FillSpec& spec) {
  ExecutableImpl& exe = impl();
  const std::uint32_t c = locate(exe, command, CommandKind::fill);
  require(exe, c, detail::problem_with(spec));
  exe.check_memory(c, spec.dst);
  exe.arguments_for_update().assign(std::get<detail::FillPayload>(exe.plan().command(c).payload).spec,
                                    &spec);
  exe.apply_update(c);
}

void Executable::reject_value(detail::CommandRef command, CommandKind kind,
                        const detail::Misfit& misfit) {
  ExecutableImpl& exe = impl();
  const std::string name = exe.plan().name(locate(exe, command, kind));
  throw Error(errc::invalid_argument,
              "update of command '" + name + "': " + misfit.what + " does not fit " +
                  (kind == CommandKind::fill ? "the element type, " : "the parameter's type, ") +
                  misfit.type,
              {name});
}

UpdateResult Executable::update(CommandBuffer& rerecorded, const UpdateOptions& options) {
  ExecutableImpl& exe = impl();
  const std::shared_ptr<detail::Recording>& rec = rerecorded.recording();
  const detail::Recording::UseGuard guard(*rec);
  auto plan = detail::build_plan(rec);
  UpdateResult result = exe.update_from(std::move(plan), options);
  rec->seal();
  return result;
}

}  // namespace cmdgraph
