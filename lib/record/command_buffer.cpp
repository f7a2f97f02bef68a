// CommandBuffer: record-time validation of each command, then storage in the Recording.
// Collectives of one communicator are chained in recording order as they are recorded.
#include "record/recording.hpp"
#include "record/sizes_before.hpp"
#include "command/record_site.hpp"
#include "command/value_rules.hpp"
#include "sync/access.hpp"

#include <cmdgraph/command_buffer.hpp>
#include <cmdgraph/config.hpp>
#include <cmdgraph/error.hpp>

#include <source_location>

#if CMDGRAPH_HAVE_NCCL
#include "collective/communicator_state.hpp"
#endif

namespace cmdgraph {
namespace {

using detail::Recording;

[[noreturn]] void reject(const Recording& rec, CommandKind kind, const std::string& why,
                         errc code = errc::invalid_argument) {
  throw Error(code, "command buffer '" + rec.name() + "': " + rec.next_label(kind) + ": " + why,
              {rec.next_name(kind)});
}

void require(const Recording& rec, CommandKind kind, const std::string& problem) {
  if (!problem.empty()) reject(rec, kind, problem);
}

}  // namespace

CommandBuffer::CommandBuffer(std::string name)
    : rec_(std::make_shared<Recording>(std::move(name))) {
  detail::reserve_as_before(*rec_);
  detail::register_recording(*rec_);
}

CommandBuffer::CommandBuffer(CommandBuffer&& other) noexcept : rec_(std::move(other.rec_)) {}

CommandBuffer& CommandBuffer::operator=(CommandBuffer&& other) noexcept {
  if (this != &other) {
    if (rec_) {
      detail::remember_sizes(*rec_);
      detail::unregister_recording(*rec_);
    }
    rec_ = std::move(other.rec_);
  }
  return *this;
}

CommandBuffer::~CommandBuffer() {
  if (!rec_) return;
  detail::remember_sizes(*rec_);
  detail::unregister_recording(*rec_);
}

namespace {
Recording& open(const std::shared_ptr<Recording>& rec) {
  if (!rec) throw Error(errc::invalid_handle, "a moved-from command buffer was used");
  return *rec;
}
}  // namespace

const std::string& CommandBuffer::name() const { return open(rec_).name(); }
std::size_t CommandBuffer::size() const { return open(rec_).commands().size(); }
bool CommandBuffer::sealed() const { return open(rec_).sealed(); }

void CommandBuffer::reset() {
  Recording& old = open(rec_);
  auto fresh = std::make_shared<Recording>(old.name());
  fresh->reserve(old.sizes());         // the next frame is most likely the size of the last
  detail::register_recording(*fresh);  // may fail: then nothing changed
  detail::unregister_recording(old);
  rec_ = std::move(fresh);
}

const std::shared_ptr<detail::Recording>& detail::recording_of(const CommandBuffer& buffer) {
  open(buffer.rec_);
  return buffer.rec_;
}

detail::CommandRef CommandBuffer::add_kernel(const detail::KernelSpec& spec,
                                             std::source_location where) {
  Recording& rec = open(rec_);
  const Recording::UseGuard guard(rec, where);
  rec.require_open("record");
  if (spec.function == nullptr) reject(rec, CommandKind::kernel, "null kernel function");
  require(rec, CommandKind::kernel, detail::problem_with(spec.config));
  detail::ArgumentStore& args = rec.arguments();
  const auto config = args.add_value(spec.config);
  const detail::KernelArguments& arguments = spec.arguments;
  args.add_all(arguments);
  return rec.add(detail::KernelPayload{spec.function, config, config + 1,
                                       static_cast<std::uint32_t>(arguments.count),
                                       arguments.signature});
}

detail::CommandRef CommandBuffer::add_parallel_for(const detail::ParallelForSpec& spec,
                                                   std::source_location where) {
  Recording& rec = open(rec_);
  const Recording::UseGuard guard(rec, where);
  rec.require_open("record");
  if (spec.count == 0) reject(rec, CommandKind::parallel_for, "zero-size range");
  detail::ArgumentStore& args = rec.arguments();
  const auto functor = args.add(spec.functor);
  args.add_value(spec.count);
  return rec.add(detail::ParallelForPayload{functor, spec.host, spec.device_kernel, spec.type});
}

detail::CommandRef CommandBuffer::add_indirect(const detail::IndirectRecord& record,
                                               std::source_location where) {
  Recording& rec = open(rec_);
  const Recording::UseGuard guard(rec, where);
  rec.require_open("record");
  if (record.function == nullptr && record.host == nullptr) {
    reject(rec, CommandKind::indirect, "null kernel function");
  }
  require(rec, CommandKind::indirect, detail::problem_with(record.spec));
  detail::ArgumentStore& args = rec.arguments();
  const auto spec = args.add_value(record.spec);
  const detail::KernelArguments& arguments = record.arguments;
  args.add_all(arguments);
  std::uint32_t params = static_cast<std::uint32_t>(arguments.count);
  if (detail::runs_items(record.spec.form)) {
    // The parallel_for kernel's count, which a count's dispatcher sets as the command runs.
    args.add_value(static_cast<std::size_t>(record.spec.max_count));
    ++params;
  }
  return rec.add(detail::IndirectPayload{record.function, record.host, spec, params,
                                         arguments.signature});
}

namespace {
// What a kind's recording hook checks and stores through: the command about to be recorded.
class RecordingSite final : public detail::RecordSite {
 public:
  RecordingSite(Recording& rec, CommandKind kind) : rec_(rec), kind_(kind) {}
  void require(const std::string& problem) const override {
    cmdgraph::require(rec_, kind_, problem);
  }
  detail::ArgumentStore& values() override { return rec_.arguments(); }

 private:
  Recording& rec_;
  CommandKind kind_;
};
}  // namespace

detail::CommandRef CommandBuffer::add_command(CommandKind kind,
                                              const detail::CommandValues& values,
                                              std::source_location where) {
  Recording& rec = open(rec_);
  const Recording::UseGuard guard(rec, where);
  rec.require_open("record");
  RecordingSite site(rec, kind);
  return rec.add(detail::record_command(kind, site, values));
}

detail::CommandRef CommandBuffer::add_host(std::shared_ptr<detail::HostTask> task,
                                           std::source_location where) {
  Recording& rec = open(rec_);
  const Recording::UseGuard guard(rec, where);
  return rec.add(detail::HostPayload{std::move(task)});
}

detail::CommandRef CommandBuffer::add_capture(std::shared_ptr<detail::CaptureTask> task,
                                              std::source_location where) {
  Recording& rec = open(rec_);
  const Recording::UseGuard guard(rec, where);
  return rec.add(detail::CapturePayload{std::move(task)});
}

Command CommandBuffer::record(const Event& event, std::source_location where) {
  Recording& rec = open(rec_);
  const Recording::UseGuard guard(rec, where);
  rec.require_open("record");
  if (!detail::Access::state(event)) reject(rec, CommandKind::event_record, "moved-from event", errc::invalid_handle);
  return Command(rec.add(detail::EventRecordPayload{detail::Access::state(event)}));
}

Command CommandBuffer::wait(const Event& event, std::source_location where) {
  Recording& rec = open(rec_);
  const Recording::UseGuard guard(rec, where);
  rec.require_open("record");
  if (!detail::Access::state(event)) reject(rec, CommandKind::event_wait, "moved-from event", errc::invalid_handle);
  return Command(rec.add(detail::EventWaitPayload{detail::Access::state(event)}));
}

Command CommandBuffer::execute(CommandBuffer& secondary, std::source_location where) {
  Recording& rec = open(rec_);
  const Recording::UseGuard guard(rec, where);
  rec.require_open("record");
  if (!secondary.rec_) {
    reject(rec, CommandKind::nested, "moved-from secondary command buffer", errc::invalid_handle);
  }
  if (secondary.rec_ == rec_) reject(rec, CommandKind::nested, "a command buffer cannot execute itself");
  const Recording::ReadGuard reading(*secondary.rec_);
  const detail::Recording* const body = secondary.rec_.get();
  rec.require_nestable(CommandKind::nested, {&body, 1});
  secondary.rec_->seal_as_body();
  return Command(rec.add(detail::NestedPayload{secondary.rec_}));
}

namespace {

// Records a conditional command of payload P running `bodies` (the buffers' recordings, in
// P's order; null for a moved-from buffer), each checked, read under its guard and sealed;
// nothing is recorded when one is refused.
template <class P>
detail::CommandRef add_conditional(const std::shared_ptr<Recording>& self,
                                   const std::vector<std::shared_ptr<Recording>>& bodies,
                                   const detail::ConditionSpec& spec,
                                   std::source_location where) {
  Recording& rec = open(self);
  const Recording::UseGuard guard(rec, where);
  rec.require_open("record");
  constexpr CommandKind kind = P::traits.kind;
  if (bodies.empty()) reject(rec, kind, "no bodies to choose from");
  for (const auto& body : bodies) {
    if (!body) reject(rec, kind, "moved-from body", errc::invalid_handle);
    if (body == self) reject(rec, kind, "a command buffer cannot run itself as a body");
  }
  std::vector<std::unique_ptr<Recording::ReadGuard>> reading;
  std::vector<const Recording*> nested;
  for (const auto& body : bodies) {
    reading.push_back(std::make_unique<Recording::ReadGuard>(*body));
    nested.push_back(body.get());
  }
  rec.require_nestable(kind, nested);
  P payload;
  payload.bodies.assign(bodies.begin(), bodies.end());
  payload.condition = {rec.arguments().add(spec.condition), spec.host, spec.device_kernel};
  for (const auto& body : bodies) body->seal_as_body();
  return rec.add(std::move(payload));
}

}  // namespace

detail::CommandRef CommandBuffer::add_loop(CommandBuffer& body, const detail::ConditionSpec& spec,
                                           std::source_location where) {
  return add_conditional<detail::LoopPayload>(rec_, {body.rec_}, spec, where);
}

detail::CommandRef CommandBuffer::add_if(CommandBuffer& body, const detail::ConditionSpec& spec,
                                         std::source_location where) {
  return add_conditional<detail::IfPayload>(rec_, {body.rec_}, spec, where);
}

detail::CommandRef CommandBuffer::add_if_else(std::span<CommandBuffer* const> bodies,
                                              const detail::ConditionSpec& spec,
                                              std::source_location where) {
  std::vector<std::shared_ptr<Recording>> recordings;
  for (CommandBuffer* body : bodies) recordings.push_back(body->rec_);
  return add_conditional<detail::IfElsePayload>(rec_, recordings, spec, where);
}

detail::CommandRef CommandBuffer::add_switch(std::span<CommandBuffer* const> bodies,
                                             const detail::ConditionSpec& spec,
                                             std::source_location where) {
  std::vector<std::shared_ptr<Recording>> recordings;
  for (CommandBuffer* body : bodies) recordings.push_back(body->rec_);
  return add_conditional<detail::SwitchPayload>(rec_, recordings, spec, where);
}

detail::Allocation CommandBuffer::add_alloc(std::size_t count, std::size_t element_size,
                                           std::size_t alignment, std::source_location where) {
  Recording& rec = open(rec_);
  const Recording::UseGuard guard(rec, where);
  rec.require_open("record");
  if (count == 0) reject(rec, CommandKind::alloc, "zero-size allocation");
  if (count > SIZE_MAX / element_size) {
    reject(rec, CommandKind::alloc,
           std::to_string(count) + " elements of " + std::to_string(element_size) +
               " bytes are larger than any memory (the size in bytes overflows size_t)");
  }
  // Where executables place transients, offsets are multiples of 256 bytes (CUDA's own
  // allocation alignment).
  if (alignment > 256) reject(rec, CommandKind::alloc, "element alignment above 256 bytes");
  auto memory = std::make_shared<const detail::TransientRange>(
      count * element_size, static_cast<std::uint32_t>(element_size), rec.id());
  void* data = memory->data();
  return {rec.add(detail::AllocPayload{std::move(memory)}), data};
}

detail::CommandRef CommandBuffer::add_free(detail::CommandRef alloc,
                                           std::source_location where) {
  Recording& rec = open(rec_);
  const Recording::UseGuard guard(rec, where);
  rec.require_open("record");
  if (alloc.recording != rec.id()) {
    detail::resolve(alloc);  // invalid or stale handles throw here
    const std::string name = rec.next_name(CommandKind::free);
    throw Error(errc::foreign_handle,
                "command buffer '" + rec.name() + "': " + rec.next_label(CommandKind::free) +
                    ": transient memory '" +
                    detail::describe_handle(alloc) + "' belongs to another command buffer; "
                    "free it where it was allocated",
                {name, detail::describe_handle(alloc)});
  }
  rec.require_command(alloc);
  return rec.add_free(alloc.index);
}

void CommandBuffer::reject_value(CommandKind kind, const detail::Misfit& misfit,
                                 std::source_location where) const {
  const Recording& rec = open(rec_);
  const Recording::UseGuard guard(rec, where);
  cmdgraph::reject(rec, kind, misfit.message());
}

#if CMDGRAPH_HAVE_NCCL
namespace {

// The rank's state behind `comm`; refuses an empty handle, naming the command.
const std::shared_ptr<detail::CommunicatorState>& rank_of(const Recording& rec,
                                                          const Communicator& comm) {
  const auto& state = detail::CommunicatorAccess::state(comm);
  if (!state) {
    reject(rec, CommandKind::collective, "empty or moved-from communicator", errc::invalid_handle);
  }
  return state;
}

// Appends a collective of `state` and orders it after the previous one of the same
// communicator: NCCL runs a communicator's operations in the order each rank issues them, and
// every rank must issue them in one order.
detail::CommandRef add_in_order(Recording& rec, std::shared_ptr<detail::CommunicatorState> state,
                                detail::ArgumentStore::Slot spec) {
  std::optional<std::uint32_t> previous;
  for (std::uint32_t i = static_cast<std::uint32_t>(rec.commands().size()); i-- > 0;) {
    if (detail::communicator(rec.commands()[i].payload) == state) {
      previous = i;
      break;
    }
  }
  const int ranks = state->size(), rank = state->rank(), device = state->device();
  const detail::CommandRef ref =
      rec.add(detail::CollectivePayload{std::move(state), spec, ranks, rank, device});
  if (previous) rec.add_edge(*previous, ref.index);
  return ref;
}

}  // namespace

detail::CommandRef CommandBuffer::add_collective(const Communicator& comm,
                                                 const detail::CollectiveSpec& spec,
                                                 std::source_location where) {
  Recording& rec = open(rec_);
  const Recording::UseGuard guard(rec, where);
  rec.require_open("record");
  const auto& state = rank_of(rec, comm);
  detail::CollectiveSpec checked = spec;
  require(rec, CommandKind::collective,
          detail::prepare(checked, state->size(), state->rank(), state->device()));
  return add_in_order(rec, state, rec.arguments().add_value(checked));
}

detail::CommandRef CommandBuffer::add_exchange(const Communicator& comm,
                                               std::span<const PeerTransfer> transfers,
                                               std::source_location where) {
  Recording& rec = open(rec_);
  const Recording::UseGuard guard(rec, where);
  rec.require_open("record");
  const auto& state = rank_of(rec, comm);
  if (transfers.empty()) reject(rec, CommandKind::collective, "an exchange of no transfers");
  std::vector<detail::TransferSpec> checked;
  checked.reserve(transfers.size());
  for (const PeerTransfer& t : transfers) {
    checked.push_back(t.spec);
    const std::string problem = detail::prepare(checked.back(), state->size(), state->device());
    if (!problem.empty()) {
      reject(rec, CommandKind::collective,
             "transfer " + std::to_string(checked.size() - 1) + " (" +
                 (t.spec.sends ? "send_to " : "recv_from ") + std::to_string(t.spec.peer) +
                 "): " + problem);
    }
  }
  detail::ArgumentStore& args = rec.arguments();
  const auto spec = args.add_value(detail::CollectiveSpec{
      detail::CollectiveOp::exchange, detail::ElementType::uint8, ReduceOp::sum, -1,
      checked.size(), {}, {}});
  for (const detail::TransferSpec& t : checked) args.add_value(t);
  return add_in_order(rec, state, spec);
}
#endif

Command CommandBuffer::barrier() {
  Recording& rec = open(rec_);
  const Recording::UseGuard guard(rec);
  return Command(rec.add_barrier());
}

}  // namespace cmdgraph
