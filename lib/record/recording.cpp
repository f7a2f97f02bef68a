// Recording: command storage, edges, barrier segments, names, declared access (the registry
// that lets a handle find its open recording is record/registry.cpp).
#include "record/recording.hpp"

#include <cmdgraph/error.hpp>

#include <atomic>
#include <charconv>

namespace cmdgraph::detail {
namespace {

std::atomic<std::uint64_t> next_recording_id{1};

std::string in_quotes(const std::string& s) { return "'" + s + "'"; }

// An executed buffer's commands sit between two joins once expanded in place.
std::uint64_t joins_around(CommandKind kind) { return traits(kind).expands ? 2 : 0; }

}  // namespace

Recording::Recording(std::string name) : id_(next_recording_id++), name_(std::move(name)) {}
Recording::~Recording() = default;

RecordingSizes Recording::sizes() const noexcept {
  return {commands().size(), declared_.size(), edges_.size(), programmatic_edges_.size(),
          arguments_->slot_count(), arguments_->bytes_used()};
}

void Recording::reserve(const RecordingSizes& sizes) {
  // An eighth to spare: frames of structures that take turns differ by a few commands, and
  // one past the room copies everything recorded so far.
  auto room = [](std::size_t n) { return n + n / 8; };
  own_commands().reserve(room(sizes.commands));
  declared_.reserve(room(sizes.declared));
  edges_.reserve(room(sizes.edges));
  programmatic_edges_.reserve(room(sizes.programmatic_edges));
  arguments_->reserve(room(sizes.slots), room(sizes.bytes));
}

void Recording::refuse_sealed(const char* action) const {
  throw Error(errc::wrong_state, "command buffer " + in_quotes(name_) + " is compiled; cannot " +
                                     action + " until reset()");
}

std::string Recording::next_name(CommandKind kind) const {
  return default_name(kind, static_cast<std::uint32_t>(commands().size()));
}

std::string Recording::next_label(CommandKind kind) const {
  std::string label = next_name(kind);
  if (site_.line() == 0) return label;
  // The file as the user knows it: its name, not the compiler's path to it.
  const std::string_view file = site_.file_name();
  const std::size_t slash = file.find_last_of("/\\");
  label += " (recorded at ";
  label += slash == std::string_view::npos ? file : file.substr(slash + 1);
  return label + ":" + std::to_string(site_.line()) + ")";
}

void Recording::require_nestable(CommandKind kind,
                                 std::span<const Recording* const> bodies) const {
  for (const Recording* body : bodies) {
    if (body->allocations_ == 0) continue;
    // A body's allocation would be a graph node inside a child or conditional graph, which
    // CUDA does not take; one executable places all its transient memory.
    const auto alloc = std::find_if(body->commands().begin(), body->commands().end(),
                                    [](const CommandRecord& r) {
                                      return allocated(r.payload) != nullptr;
                                    });
    const std::string name = next_name(kind);
    const std::string allocation =
        body->command_name(static_cast<std::uint32_t>(alloc - body->commands().begin()));
    throw Error(errc::unsupported,
                "command buffer " + in_quotes(name_) + ": " + next_label(kind) + ": '" +
                    body->name() + "' allocates transient memory (" + in_quotes(allocation) +
                    "); alloc() and free() belong to the command buffer that is compiled, not "
                    "to an executed buffer or a body (allocate there and use it inside)",
                {name, allocation});
  }
  std::uint32_t depth = depth_;
  std::uint64_t expanded = expanded_ + 1 + joins_around(kind);
  const Recording* deepest = nullptr;
  for (const Recording* body : bodies) {
    if (body->depth() + 1 > depth) {
      depth = body->depth() + 1;
      deepest = body;
    }
    expanded += body->expanded_size();
  }
  if (depth <= max_nesting_depth && expanded <= max_expanded_size) return;
  const std::string name = next_name(kind);
  const std::string where = "command buffer " + in_quotes(name_) + ": " + next_label(kind) + ": ";
  if (depth > max_nesting_depth) {
    throw Error(errc::invalid_argument,
                where + "running '" + deepest->name() + "' here nests " + std::to_string(depth) +
                    " levels of executed buffers and conditional bodies; at most " +
                    std::to_string(max_nesting_depth) + " are supported",
                {name});
  }
  std::string running;
  for (const Recording* body : bodies) {
    running += (running.empty() ? "'" : ", '") + body->name() + "'";
  }
  throw Error(errc::invalid_argument,
              where + "running " + running + " here makes " + std::to_string(expanded) +
                  " commands once executed buffers are expanded; at most " +
                  std::to_string(max_expanded_size) + " are supported",
              {name});
}

void Recording::refuse_foreign_transients(CommandKind kind) {
  const ArgumentStore::Slot first = commands().empty() ? 0 : commands().back().slots_end;
  const ArgumentStore& values = *arguments_;
  for (ArgumentStore::Slot s = first; s < values.slot_count(); ++s) {
    bool foreign = false;
    for_each_word(values.data(s), values.size(s), [&](std::uint32_t, std::uintptr_t w) {
      const std::uint64_t owner = transient_owner(w);
      foreign = foreign || (owner != 0 && owner != id_);
    });
    if (!foreign) continue;
    arguments().truncate(first);  // the refused command leaves nothing behind
    const std::string name = next_name(kind);
    throw Error(errc::foreign_handle,
                "command buffer " + in_quotes(name_) + ": " + next_label(kind) +
                    ": a value reaches transient memory of another command buffer; transient "
                    "memory is used in the buffer that allocates it",
                {name});
  }
}

CommandRef Recording::add(Payload payload) {  // bodies passed require_nestable
  require_open("record");
  if (any_live_transients()) refuse_foreign_transients(kind_of(payload));
  const auto index = static_cast<std::uint32_t>(commands().size());
  std::uint32_t depth = depth_;
  std::uint64_t expanded = expanded_ + 1;
  const auto bodies = bodies_of(payload);
  if (!bodies.empty()) expanded += joins_around(kind_of(payload));
  for (const auto& body : bodies) {
    depth = std::max(depth, body->depth() + 1);
    expanded += body->expanded_size();
  }
  // Make room first: a failed allocation must not leave a command without its barrier edge.
  reserve_edges(1);
  const bool allocates = allocated(payload) != nullptr;
  // Made in place: a CommandRecord moved into the vector cost a variant's move and destruction.
  own_commands().emplace_back(std::move(payload)).slots_end =
      static_cast<ArgumentStore::Slot>(arguments_->slot_count());
  if (last_barrier_) edges_.push_back({*last_barrier_, index});
  allocations_ += allocates;
  depth_ = depth;
  expanded_ = expanded;
  return {id_, index};
}

CommandRef Recording::add_barrier() {
  require_open("record");
  const auto index = static_cast<std::uint32_t>(commands().size());
  reserve_edges((index - segment_begin_) + 1);
  own_commands().push_back({BarrierPayload{}, {}, {},
                            static_cast<ArgumentStore::Slot>(arguments_->slot_count())});
  ++expanded_;
  if (segment_begin_ == index && last_barrier_) edges_.push_back({*last_barrier_, index});
  for (std::uint32_t i = segment_begin_; i < index; ++i) edges_.push_back({i, index});
  last_barrier_ = index;
  segment_begin_ = index + 1;
  return {id_, index};
}

void Recording::refuse_self_edge(std::uint32_t command) const {
  throw Error(errc::self_edge,
              "command buffer " + in_quotes(name_) + ": command " +
                  in_quotes(command_name(command)) + " cannot depend on itself",
              {command_name(command)});
}

void Recording::require_programmatic(std::uint32_t parent, std::uint32_t child) const {
  for (const std::uint32_t c : {parent, child}) {
    const KindTraits& t = traits(kind_of(commands()[c].payload));
    if (t.programmatic) continue;
    throw Error(errc::invalid_argument,
                "command buffer " + in_quotes(name_) + ": the programmatic edge " +
                    in_quotes(command_name(parent)) + " -> " + in_quotes(command_name(child)) +
                    " joins " + in_quotes(command_name(c)) + ", " + t.with_article() +
                    "; programmatic edges join kernels (launch, parallel_for)",
                {command_name(parent), command_name(child)});
  }
}

CommandRef Recording::add_free(std::uint32_t alloc) {
  require_open("record");
  const std::string name = next_name(FreePayload::traits.kind);
  std::shared_ptr<const TransientRange> memory = allocated(commands()[alloc].payload);
  if (!memory) {
    throw Error(errc::invalid_argument,
                "command buffer " + in_quotes(name_) + ": " + name + ": command " +
                    in_quotes(command_name(alloc)) + " is a " +
                    std::string(traits(kind_of(commands()[alloc].payload)).name) +
                    ", not an allocation (free() takes what alloc() returned)",
                {name, command_name(alloc)});
  }
  if (const auto it = freed_.find(alloc); it != freed_.end()) {
    throw Error(errc::invalid_argument,
                "command buffer " + in_quotes(name_) + ": " + name + ": transient memory " +
                    in_quotes(command_name(alloc)) + " is already freed by " +
                    in_quotes(command_name(it->second)),
                {name, command_name(alloc), command_name(it->second)});
  }
  freed_.reserve(freed_.size() + 1);  // so the insertion below cannot fail after the add
  const CommandRef ref = add(FreePayload{std::move(memory), alloc});
  freed_.emplace(alloc, ref.index);
  return ref;
}

void Recording::set_priority(std::uint32_t index, PriorityRequest priority) {
  require_open("set priorities");
  if (!priority.native && (priority.value < static_cast<int>(Priority::low) ||
                           priority.value > static_cast<int>(Priority::high))) {
    throw Error(errc::invalid_argument,
                "command " + in_quotes(command_name(index)) + " was given priority " +
                    std::to_string(priority.value) + ", which is not a Priority enumerator",
                {command_name(index)});
  }
  own_commands()[index].hints.priority = priority;
}

void Recording::set_programmatic_safe(std::uint32_t index) {
  require_open("mark kernels programmatic-safe");
  own_commands()[index].hints.programmatic_safe = true;
}

void Recording::set_update_free(std::uint32_t index) {
  require_open("mark kernels update-free");
  own_commands()[index].hints.update_free = true;
}

void Recording::set_name(std::uint32_t index, std::string_view name) {
  require_open("rename commands");
  // An empty name restores the default ("kind#index"), so every command always has one.
  own_commands()[index].name = name;
}

void Recording::add_access(std::uint32_t index, const AccessDeclaration& d) {
  require_open("declare access");
  const CommandKind kind = kind_of(commands()[index].payload);
  // Named only when refused: a default name is made when asked for.
  const auto name = [&] { return command_name(index); };
  if (!traits(kind).declares_access) {
    throw Error(errc::invalid_argument,
                "command " + in_quotes(name()) + " is a " + std::string(traits(kind).name) +
                    ", which cannot declare access: copies and fills declare their memory "
                    "themselves, executed buffers their commands'",
                {name()});
  }
  if (!d.data || d.bytes == 0) {
    throw Error(errc::invalid_argument,
                "command " + in_quotes(name()) + " declares that it " + verb(d.mode) + " " +
                    (d.data ? "an empty view" : "a null view") + "; declare the memory it touches",
                {name()});
  }
  const auto begin = reinterpret_cast<std::uintptr_t>(d.data);
  if (any_live_transients()) {
    for (const std::uintptr_t at : {begin, begin + d.bytes - 1}) {
      const std::uint64_t owner = transient_owner(at);
      if (owner == 0 || owner == id_) continue;
      throw Error(errc::foreign_handle,
                  "command " + in_quotes(name()) + " declares that it " + verb(d.mode) +
                      " transient memory of another command buffer; transient memory is used "
                      "in the buffer that allocates it",
                  {name()});
    }
  }
  if (!d.label.empty() && !labels_) labels_ = std::make_shared<LabelStore>();
  declared_.push_back({index,
                       {.begin = begin,
                        .end = begin + d.bytes,
                        .origin = reinterpret_cast<std::uintptr_t>(d.origin ? d.origin : d.data),
                        .element_size = static_cast<std::uint32_t>(d.element_size),
                        .mode = d.mode,
                        .label = d.label.empty() ? nullptr : labels_->keep(d.label)}});
}

void Recording::refuse_index(CommandRef ref) const {
  throw Error(errc::invalid_handle, "command handle #" + std::to_string(ref.index) +
                                        " is out of range for command buffer " + in_quotes(name_));
}

void add_edges(CommandRef child, const CommandRef* parents, std::size_t count, EdgeKind kind) {
  Recording& rec = resolve(child);
  const Recording::UseGuard guard(rec);
  rec.require_command(child);
  rec.require_open("add edges");
  if (kind != EdgeKind::full && kind != EdgeKind::programmatic) {
    const std::string name = rec.command_name(child.index);
    throw Error(errc::invalid_argument,
                "command " + in_quotes(name) + " of command buffer " + in_quotes(rec.name()) +
                    ": edge kind " + std::to_string(static_cast<int>(kind)) +
                    " is not an EdgeKind enumerator",
                {name});
  }
  // Validate every parent before adding any edge, so a failed call changes nothing.
  for (std::size_t i = 0; i < count; ++i) {
    if (parents[i].recording == child.recording) {
      rec.require_command(parents[i]);
      continue;
    }
    Recording& other = resolve(parents[i]);  // throws for invalid or stale handles
    throw Error(errc::foreign_handle,
                "command " + in_quotes(rec.command_name(child.index)) + " of command buffer " +
                    in_quotes(rec.name()) + " cannot depend on command " +
                    in_quotes(other.command_name(parents[i].index)) + " of command buffer " +
                    in_quotes(other.name()) + "; use execute() or events across buffers",
                {rec.command_name(child.index), other.command_name(parents[i].index)});
  }
  for (std::size_t i = 0; i < count; ++i) {
    if (parents[i].index == child.index) rec.add_edge(child.index, child.index, kind);  // throws
    if (kind == EdgeKind::programmatic) rec.require_programmatic(parents[i].index, child.index);
  }
  rec.reserve_edges(count, kind);
  for (std::size_t i = 0; i < count; ++i) rec.add_edge(parents[i].index, child.index, kind);
}

void set_priority(CommandRef command, PriorityRequest priority) {
  Recording& rec = resolve(command);
  const Recording::UseGuard guard(rec);
  rec.require_command(command);
  rec.set_priority(command.index, priority);
}

void set_programmatic_safe(CommandRef command) {
  Recording& rec = resolve(command);
  const Recording::UseGuard guard(rec);
  rec.require_command(command);
  rec.set_programmatic_safe(command.index);
}

void set_update_free(CommandRef command) {
  Recording& rec = resolve(command);
  const Recording::UseGuard guard(rec);
  rec.require_command(command);
  rec.set_update_free(command.index);
}

void set_name(CommandRef command, std::string_view name) {
  Recording& rec = resolve(command);
  const Recording::UseGuard guard(rec);
  rec.require_command(command);
  rec.set_name(command.index, name);
}

void declare_access(CommandRef command, const AccessDeclaration& access) {
  Recording& rec = resolve(command);
  const Recording::UseGuard guard(rec);
  rec.add_access(command.index, access);
}

std::string command_name(CommandRef command) {
  const Recording& rec = resolve(command);
  const Recording::ReadGuard guard(rec);  // not while another thread records into it
  rec.require_command(command);
  return rec.command_name(command.index);
}

}  // namespace cmdgraph::detail
