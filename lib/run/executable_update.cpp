// Executable's updates: find the command, check the new values, write them, let the backend
// apply them.
#include "plan/plan.hpp"
#include "record/recording.hpp"
#include "record/validate.hpp"
#include "backend/executable_impl.hpp"

#include <cmdgraph/command_buffer.hpp>
#include <cmdgraph/config.hpp>
#include <cmdgraph/error.hpp>

#include <algorithm>
#include <chrono>

#if CMDGRAPH_HAVE_NCCL
#include "collective/communicator_state.hpp"
#endif

namespace cmdgraph {
namespace {

using detail::ExecutableImpl;

// The root command `ref` names in `exe`, checked to be a P; its index and payload.
template <class P>
std::pair<std::uint32_t, const P&> locate(const ExecutableImpl& exe, detail::CommandRef ref) {
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
  static_assert(P::traits.updatable);
  const auto* payload = std::get_if<P>(&plan.payload(ref.index));
  if (!payload) {
    throw Error(errc::invalid_argument, "command '" + plan.name(ref.index) + "' is a " +
                                            to_string(plan.kind(ref.index)) + ", not a " +
                                            to_string(P::traits.kind),
                {plan.name(ref.index)});
  }
  return {ref.index, *payload};
}

void require(const ExecutableImpl& exe, std::uint32_t c, const std::string& problem) {
  if (!problem.empty()) {
    const std::string name = exe.plan().name(c);
    throw Error(errc::invalid_argument, "update of command '" + name + "': " + problem, {name});
  }
}

// Refuses a typed handle whose type is not the one command `c` was recorded with (a handle
// made from another command's reference): its values would not fit the recorded ones.
void require_recorded_type(const ExecutableImpl& exe, std::uint32_t c,
                           const std::type_info* recorded, const std::type_info& handle,
                           const char* what) {
  if (recorded && *recorded == handle) return;
  require(exe, c, std::string("the handle's ") + what + " is not the one the command was " +
                      "recorded with (a handle of another command's type)");
}

// Refuses a typed copy or fill handle of another element type than command `c` recorded.
void require_element_size(const ExecutableImpl& exe, std::uint32_t c, std::size_t recorded,
                          std::size_t handle) {
  if (recorded == handle) return;
  require(exe, c, "the handle's element type (" + std::to_string(handle) +
                      " bytes) is not the one the command was recorded with (" +
                      std::to_string(recorded) + " bytes)");
}

// How errors name an update of root command `c`.
std::string who(const ExecutableImpl& exe, std::uint32_t c) {
  return "update of command '" + exe.plan().name(c) + "'";
}

}  // namespace

void Executable::update_kernel_arguments(detail::CommandRef command,
                                         const detail::KernelParam* params, std::size_t count,
                                         const std::type_info& type) {
  ExecutableImpl& exe = impl();
  const ExecutableImpl::Updating updating(exe);
  const auto [c, k] = locate<detail::KernelPayload>(exe, command);
  require_recorded_type(exe, c, k.signature, type, "kernel signature");
  const auto written = static_cast<std::uint32_t>(std::min<std::size_t>(count, k.param_count));
  for (std::uint32_t i = 0; i < written; ++i) {
    exe.check_transient_value(c, params[i].value, params[i].size, who(exe, c));
  }
  detail::ArgumentStore& args = exe.arguments_for_update();
  for (std::uint32_t i = 0; i < written; ++i) args.assign(k.first_param + i, params[i].value);
  exe.rebind_transients(k.first_param, written);
  exe.apply_update(c);
}

void Executable::update_launch_config(detail::CommandRef command, const LaunchConfig& config) {
  ExecutableImpl& exe = impl();
  const ExecutableImpl::Updating updating(exe);
  const auto [c, k] = locate<detail::KernelPayload>(exe, command);
  require(exe, c, detail::problem_with(config));
  exe.arguments_for_update().assign(k.config, &config);
  exe.apply_update(c);
}

void Executable::update_parallel_for(detail::CommandRef command,
                                     const detail::KernelParam& functor,
                                     const std::size_t* count, const std::type_info& type) {
  ExecutableImpl& exe = impl();
  const ExecutableImpl::Updating updating(exe);
  const auto [c, pf] = locate<detail::ParallelForPayload>(exe, command);
  require_recorded_type(exe, c, pf.type, type, "functor type");
  if (count && *count == 0) require(exe, c, "zero-size range");
  exe.check_transient_value(c, functor.value, functor.size, who(exe, c));
  detail::ArgumentStore& args = exe.arguments_for_update();
  args.assign(pf.functor, functor.value);
  if (count) args.assign(pf.count(), count);
  exe.rebind_transients(pf.functor, 1);
  exe.apply_update(c);
}

void Executable::update_copy(detail::CommandRef command, const detail::CopySpec& spec) {
  ExecutableImpl& exe = impl();
  const ExecutableImpl::Updating updating(exe);
  const auto [c, copy] = locate<detail::CopyPayload>(exe, command);
  const auto& recorded = exe.arguments_for_update().get<detail::CopySpec>(copy.spec);
  require_element_size(exe, c, recorded.dst.element_size, spec.dst.element_size);
  require(exe, c, detail::problem_with(spec));
  exe.check_memory(c, spec.dst);
  exe.check_memory(c, spec.src);
  detail::check_changed_access(exe.plan(), c,
                               {detail::access_of(spec.src, detail::AccessMode::read),
                                detail::access_of(spec.dst, detail::AccessMode::write)});
  exe.check_transient_value(c, &spec, sizeof(spec), who(exe, c));
  exe.arguments_for_update().assign(copy.spec, &spec);
  exe.rebind_transients(copy.spec, 1);
  exe.apply_update(c);
}

void Executable::update_fill(detail::CommandRef command, const detail::FillSpec& spec) {
  ExecutableImpl& exe = impl();
  const ExecutableImpl::Updating updating(exe);
  const auto [c, fill] = locate<detail::FillPayload>(exe, command);
  const auto& recorded = exe.arguments_for_update().get<detail::FillSpec>(fill.spec);
  require_element_size(exe, c, recorded.element_size, spec.element_size);
  require(exe, c, detail::problem_with(spec));
  exe.check_memory(c, spec.dst);
  detail::check_changed_access(exe.plan(), c,
                               {detail::access_of(spec.dst, detail::AccessMode::write)});
  exe.check_transient_value(c, &spec, sizeof(spec), who(exe, c));
  exe.arguments_for_update().assign(fill.spec, &spec);
  exe.rebind_transients(fill.spec, 1);
  exe.apply_update(c);
}

#if CMDGRAPH_HAVE_NCCL
void Executable::update_collective(detail::CommandRef command,
                                   const detail::CollectiveSpec& values) {
  ExecutableImpl& exe = impl();
  const ExecutableImpl::Updating updating(exe);
  const auto [c, collective] = locate<detail::CollectivePayload>(exe, command);
  detail::ArgumentStore& args = exe.arguments_for_update();
  const auto before = args.get<detail::CollectiveSpec>(collective.spec);
  if (before.op == detail::CollectiveOp::exchange) {
    require(exe, c, "an exchange's transfers change by re-recording its buffer");
  }
  detail::CollectiveSpec spec = before;
  spec.send = values.send;
  spec.recv = values.recv;
  spec.count = values.count;
  const detail::CommunicatorState& comm = *collective.comm;
  require(exe, c, detail::prepare(spec, comm.size(), comm.rank(), comm.device()));
  exe.check_memory(c, spec.send);
  exe.check_memory(c, spec.recv);
  detail::check_changed_access(exe.plan(), c,
                               {detail::access_of(spec.send, detail::AccessMode::read),
                                detail::access_of(spec.recv, detail::AccessMode::write)});
  args.assign(collective.spec, &spec);
  try {
    exe.apply_update(c);
  } catch (const Error& e) {
    args.assign(collective.spec, &before);
    if (e.code() != errc::cuda_error) throw;
    const std::string name = exe.plan().name(c);
    throw Error(errc::update_refused,
                "executable '" + exe.name() + "' cannot take the update of collective '" + name +
                    "' in place: " + e.what(),
                {name}, e.cuda_status());
  }
}
#endif

void Executable::reject_value(detail::CommandRef command, CommandKind kind,
                              const detail::Misfit& misfit) {
  ExecutableImpl& exe = impl();
  const std::uint32_t c = kind == CommandKind::fill
                              ? locate<detail::FillPayload>(exe, command).first
                              : locate<detail::KernelPayload>(exe, command).first;
  const std::string name = exe.plan().name(c);
  throw Error(errc::invalid_argument,
              "update of command '" + name + "': " + misfit.what + " does not fit " +
                  (kind == CommandKind::fill ? "the element type, " : "the parameter's type, ") +
                  misfit.type,
              {name});
}

UpdateResult Executable::update(CommandBuffer& rerecorded, const UpdateOptions& options) {
  ExecutableImpl& exe = impl();
  const ExecutableImpl::Updating updating(exe);
  const std::shared_ptr<detail::Recording>& rec = detail::recording_of(rerecorded);
  const detail::Recording::UseGuard guard(*rec);
  auto plan = detail::build_plan(*rec, exe.plan().hazards.requested);
  UpdateResult result = exe.update_from(std::move(plan), options);
  rec->seal();
  return result;
}

}  // namespace cmdgraph
