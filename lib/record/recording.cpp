// Recording: command storage, edges, barrier segments, names, and the registry that lets a
// handle find its open recording (or report that it has none).
#include "record/recording.hpp"

#include <cmdgraph/error.hpp>

#include <mutex>
#include <unordered_map>

namespace cmdgraph::detail {
namespace {

std::atomic<std::uint64_t> next_recording_id{1};

struct Registry {
  std::mutex mutex;
  std::unordered_map<std::uint64_t, Recording*> open;
};
Registry& registry() {
  static Registry r;
  return r;
}

std::string quoted(const std::string& s) { return "'" + s + "'"; }

// An executed buffer's commands sit between two joins once expanded in place.
std::uint64_t joins_around(CommandKind kind) { return kind == CommandKind::nested ? 2 : 0; }

}  // namespace

Recording::Recording(std::string name) : id_(next_recording_id++), name_(std::move(name)) {}
Recording::~Recording() = default;

void Recording::require_open(const char* action) const {
  if (sealed_) {
    throw Error(errc::wrong_state, "command buffer " + quoted(name_) + " is compiled; cannot " +
                                       action + " until reset()");
  }
}

std::string Recording::next_name(CommandKind kind) const {
  return std::string(traits(kind).name) + "#" + std::to_string(commands_.size());
}

void Recording::require_nestable(CommandKind kind,
                                 std::span<const Recording* const> bodies) const {
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
  const std::string where = "command buffer " + quoted(name_) + ": " + name + ": ";
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

CommandRef Recording::add(Payload payload) {  // bodies passed require_nestable
  require_open("record");
  const auto index = static_cast<std::uint32_t>(commands_.size());
  std::uint32_t depth = depth_;
  std::uint64_t expanded = expanded_ + 1;
  const auto bodies = bodies_of(payload);
  if (!bodies.empty()) expanded += joins_around(kind_of(payload));
  for (const auto& body : bodies) {
    depth = std::max(depth, body->depth() + 1);
    expanded += body->expanded_size();
  }
  std::string name = next_name(kind_of(payload));
  // Make room first: a failed allocation must not leave a command without its barrier edge.
  reserve_edges(1);
  commands_.push_back({std::move(payload), std::move(name), {}});
  if (last_barrier_) edges_.push_back({*last_barrier_, index});
  depth_ = depth;
  expanded_ = expanded;
  return {id_, index};
}

CommandRef Recording::add_barrier() {
  require_open("record");
  const auto index = static_cast<std::uint32_t>(commands_.size());
  reserve_edges((index - segment_begin_) + 1);
  commands_.push_back({BarrierPayload{}, next_name(CommandKind::barrier), {}});
  ++expanded_;
  if (segment_begin_ == index && last_barrier_) edges_.push_back({*last_barrier_, index});
  for (std::uint32_t i = segment_begin_; i < index; ++i) edges_.push_back({i, index});
  last_barrier_ = index;
  segment_begin_ = index + 1;
  return {id_, index};
}

void Recording::add_edge(std::uint32_t parent, std::uint32_t child) {
  require_open("add edges");
  if (parent == child) {
    throw Error(errc::self_edge,
                "command buffer " + quoted(name_) + ": command " +
                    quoted(command_name(child)) + " cannot depend on itself",
                {command_name(child)});
  }
  edges_.push_back({parent, child});
}

void Recording::set_name(std::uint32_t index, std::string_view name) {
  require_open("rename commands");
  // An empty name restores the default, so every command always has one.
  commands_[index].name = name.empty() ? std::string(traits(kind_of(commands_[index].payload)).name) +
                                             "#" + std::to_string(index)
                                       : std::string(name);
}

void Recording::add_access(std::uint32_t index, const AccessDeclaration& d) {
  require_open("declare access");
  const CommandKind kind = kind_of(commands_[index].payload);
  const std::string& name = commands_[index].name;
  if (!traits(kind).declares_access) {
    throw Error(errc::invalid_argument,
                "command " + quoted(name) + " is a " + std::string(traits(kind).name) +
                    ", which cannot declare access: copies and fills declare their memory "
                    "themselves, executed buffers their commands'",
                {name});
  }
  if (!d.data || d.bytes == 0) {
    throw Error(errc::invalid_argument,
                "command " + quoted(name) + " declares that it " + verb(d.mode) + " " +
                    (d.data ? "an empty view" : "a null view") + "; declare the memory it touches",
                {name});
  }
  const auto begin = reinterpret_cast<std::uintptr_t>(d.data);
  commands_[index].access.push_back(
      {.begin = begin,
       .end = begin + d.bytes,
       .origin = reinterpret_cast<std::uintptr_t>(d.origin ? d.origin : d.data),
       .element_size = static_cast<std::uint32_t>(d.element_size),
       .mode = d.mode,
       .label = std::string(d.label)});
}

Recording::UseGuard::UseGuard(const Recording& rec) : rec_(rec) {
  if (rec_.users_.fetch_add(1) != 0 || rec_.readers_.load() != 0) {
    rec_.users_.fetch_sub(1);
    throw Error(errc::concurrent_use, "command buffer " + quoted(rec_.name_) +
                                          " is being used by two threads at once");
  }
}

Recording::UseGuard::~UseGuard() { rec_.users_.fetch_sub(1); }

Recording::ReadGuard::ReadGuard(const Recording& rec) : rec_(rec) {
  rec_.readers_.fetch_add(1);
  if (rec_.users_.load() != 0) {
    rec_.readers_.fetch_sub(1);
    throw Error(errc::concurrent_use, "command buffer " + quoted(rec_.name_) +
                                          " is executed while another thread records into it");
  }
}

Recording::ReadGuard::~ReadGuard() { rec_.readers_.fetch_sub(1); }

void register_recording(Recording& rec) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  r.open.emplace(rec.id(), &rec);
}

void unregister_recording(const Recording& rec) noexcept {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  r.open.erase(rec.id());
}

std::string describe_handle(CommandRef ref) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  const auto it = r.open.find(ref.recording);
  if (it == r.open.end() || ref.index >= it->second->commands().size()) {
    // Appended, not `"#" + std::to_string(...)`: GCC 12 at -O3 warns falsely on that form
    // (-Wrestrict), which -Werror turns into a failed release build.
    std::string described = "#";
    described += std::to_string(ref.index);
    return described + " of a destroyed or reset command buffer";
  }
  return it->second->name() + "/" + it->second->command_name(ref.index);
}

Recording& resolve(CommandRef ref) {
  if (ref.recording == 0) {
    throw Error(errc::invalid_handle, "a default-constructed or moved-from command handle was used");
  }
  Registry& r = registry();
  std::unique_lock lock(r.mutex);
  const auto it = r.open.find(ref.recording);
  if (it == r.open.end()) {
    throw Error(errc::stale_handle, "command handle #" + std::to_string(ref.index) +
                                        " belongs to a command buffer that was destroyed or reset");
  }
  return *it->second;
}

void Recording::require_command(CommandRef ref) const {
  if (ref.index >= commands_.size()) {
    throw Error(errc::invalid_handle, "command handle #" + std::to_string(ref.index) +
                                          " is out of range for command buffer " +
                                          quoted(name_));
  }
}

void add_edges(CommandRef child, const CommandRef* parents, std::size_t count) {
  Recording& rec = resolve(child);
  const Recording::UseGuard guard(rec);
  rec.require_command(child);
  rec.require_open("add edges");
  // Validate every parent before adding any edge, so a failed call changes nothing.
  for (std::size_t i = 0; i < count; ++i) {
    if (parents[i].recording == child.recording) {
      rec.require_command(parents[i]);
      continue;
    }
    Recording& other = resolve(parents[i]);  // throws for invalid or stale handles
    throw Error(errc::foreign_handle,
                "command " + quoted(rec.command_name(child.index)) + " of command buffer " +
                    quoted(rec.name()) + " cannot depend on command " +
                    quoted(other.command_name(parents[i].index)) + " of command buffer " +
                    quoted(other.name()) + "; use execute() or events across buffers",
                {rec.command_name(child.index), other.command_name(parents[i].index)});
  }
  for (std::size_t i = 0; i < count; ++i) {
    if (parents[i].index == child.index) rec.add_edge(child.index, child.index);  // throws
  }
  rec.reserve_edges(count);
  for (std::size_t i = 0; i < count; ++i) rec.add_edge(parents[i].index, child.index);
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
