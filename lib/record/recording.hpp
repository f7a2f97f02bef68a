// Recording: what a CommandBuffer holds, commands (payload and name) and edges, plus what
// recording needs: barrier segments, nesting bounds, the registry handles resolve through.
// The build stage reads it; once sealed it is immutable.
#pragma once

#include "command/edge.hpp"
#include "command/command_record.hpp"
#include "command/payloads.hpp"

#include <cmdgraph/command.hpp>
#include <cmdgraph/profile.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <source_location>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace cmdgraph::detail {

/// How much a recording holds.
struct RecordingSizes {
  std::size_t commands = 0, declared = 0, edges = 0, programmatic_edges = 0;
  std::size_t slots = 0, bytes = 0;  // its values
};

class Recording {
 public:
  explicit Recording(std::string name);
  Recording(const Recording&) = delete;
  Recording& operator=(const Recording&) = delete;
  ~Recording();

  std::uint64_t id() const noexcept { return id_; }
  const std::string& name() const noexcept { return name_; }
  bool sealed() const noexcept { return sealed_.load(std::memory_order_acquire); }
  /// Seals the recording; safe from several threads reading it at once (see ReadGuard).
  void seal() noexcept { sealed_.store(true, std::memory_order_release); }
  /// Seals it as the body of another (execute, a conditional): compiles of other buffers then
  /// read it from any thread with no guard, so not even its costs may change any more.
  void seal_as_body() noexcept {
    body_.store(true, std::memory_order_release);
    seal();
  }

  /// How much it holds, for a recording of the same frame to reserve().
  RecordingSizes sizes() const noexcept;
  /// Room for as many commands, edges, declarations and values as `sizes` says, and an eighth
  /// more: a buffer recorded again, frame after frame, then grows nothing while it records,
  /// nor when this frame is a little larger than the last.
  void reserve(const RecordingSizes& sizes);

  /// Appends a command, after the last barrier if there is one. Throws when sealed, and
  /// Error(foreign_handle) naming it, with the values it stored dropped, when one of them
  /// reaches transient memory of another recording. A command with bodies must have passed
  /// require_nestable.
  CommandRef add(Payload payload);
  /// Throws Error(invalid_argument) naming the next command when running `bodies` as that
  /// command would nest deeper than max_nesting_depth or expand past max_expanded_size, and
  /// Error(unsupported) naming it and the allocation when a body allocates transient memory.
  void require_nestable(CommandKind kind, std::span<const Recording* const> bodies) const;
  /// Appends a free of the transient memory command `alloc` (an index of this recording)
  /// allocated; Error(invalid_argument) naming both when `alloc` allocates nothing or its
  /// memory is already freed (naming that free too).
  CommandRef add_free(std::uint32_t alloc);
  /// Adds parent -> child of `kind`; Error(self_edge) when they are one command.
  void add_edge(std::uint32_t parent, std::uint32_t child, EdgeKind kind = EdgeKind::full) {
    require_open("add edges");
    if (parent == child) [[unlikely]] refuse_self_edge(child);
    (kind == EdgeKind::programmatic ? programmatic_edges_ : edges_).push_back({parent, child});
  }
  /// Error(invalid_argument) naming both unless parent and child may be joined by a
  /// programmatic edge (each runs one kernel).
  void require_programmatic(std::uint32_t parent, std::uint32_t child) const;
  /// Room for `count` more edges of `kind`, so adding them cannot fail half-way. Grows
  /// geometrically: reserving exact sizes call after call would copy the whole list every time.
  void reserve_edges(std::size_t count, EdgeKind kind = EdgeKind::full) {
    std::vector<Edge>& edges = kind == EdgeKind::programmatic ? programmatic_edges_ : edges_;
    if (edges.capacity() - edges.size() < count) {
      edges.reserve(std::max(edges.size() + count, 2 * edges.capacity()));
    }
  }
  /// Records priority() of command `index`; Error(invalid_argument) for a value that is not
  /// a Priority enumerator.
  void set_priority(std::uint32_t index, PriorityRequest priority);
  /// Records cost() of command `index`. Allowed once compiled (a hint: no command changes);
  /// Error(wrong_state) once the recording runs as a body, Error(invalid_argument) naming the
  /// command for a negative cost.
  void set_cost(std::uint32_t index, std::chrono::nanoseconds cost);
  /// Each command's cost from `profile` (CommandBuffer::costs_from); all or nothing.
  void set_costs(const Profile& profile);
  /// Records programmatic_safe() of command `index` (a kernel, by its handle's type).
  void set_programmatic_safe(std::uint32_t index);
  /// Records update_free() of command `index` (a kernel, by its handle's type).
  void set_update_free(std::uint32_t index);
  /// Closes the current barrier segment: every command since the previous barrier (or that
  /// barrier itself) precedes the new barrier command, which precedes all later commands.
  CommandRef add_barrier();
  void set_name(std::uint32_t index, std::string_view name);
  /// Error(invalid_handle) unless `ref` (a handle of this recording) names one of its
  /// commands. Call with a UseGuard or ReadGuard held.
  void require_command(CommandRef ref) const {
    if (ref.index >= commands_->size()) [[unlikely]] refuse_index(ref);
  }
  /// Records what command `index` declares it touches; Error naming it for a kind that does
  /// not declare, or null or empty memory.
  void add_access(std::uint32_t index, const AccessDeclaration& access);

  /// The command's name: its own, or "kind#index".
  std::string command_name(std::uint32_t index) const {
    return detail::command_name(commands()[index], index);
  }
  /// The name the next command will get by default, for a command refused before it exists.
  std::string next_name(CommandKind kind) const;
  /// How errors name the next command: its default name and, within a record call that gave
  /// its place (UseGuard), where it was recorded: "copy#3 (recorded at frame.cpp:42)".
  std::string next_label(CommandKind kind) const;

  /// Levels of executed buffers and conditional bodies below this one (0: none).
  std::uint32_t depth() const noexcept { return depth_; }
  /// Commands once every executed buffer is expanded in place (each body of a conditional
  /// command counted once).
  std::uint64_t expanded_size() const noexcept { return expanded_; }

  const std::vector<CommandRecord>& commands() const noexcept { return *commands_; }
  /// The commands as recorded so far, for a plan to share (copied on write, as the values).
  std::shared_ptr<const std::vector<CommandRecord>> shared_commands() const noexcept {
    return commands_;
  }
  /// What add_access recorded, in the order declared (nearly always command by command).
  const std::vector<DeclaredAccess>& declared() const noexcept { return declared_; }
  /// The labels declared() points at (null until the first label).
  std::shared_ptr<const LabelStore> labels() const noexcept { return labels_; }
  /// Full edges, recorded and from barriers, in recording order; duplicates possible.
  const std::vector<Edge>& edges() const noexcept { return edges_; }
  /// Edges recorded as EdgeKind::programmatic; duplicates possible.
  const std::vector<Edge>& programmatic_edges() const noexcept { return programmatic_edges_; }
  const ArgumentStore& arguments() const noexcept { return *arguments_; }
  /// The values to record into: copied first while a plan shares them (copy on write).
  ArgumentStore& arguments() {
    if (arguments_.use_count() > 1) arguments_ = std::make_shared<ArgumentStore>(*arguments_);
    return *arguments_;
  }
  /// The values as recorded so far, for a plan to share.
  std::shared_ptr<const ArgumentStore> shared_arguments() const noexcept { return arguments_; }

  /// Throws Error(wrong_state) when sealed, naming the buffer and what was attempted.
  void require_open(const char* action) const {
    if (sealed()) [[unlikely]] refuse_sealed(action);
  }

  /// Held by a call that changes the recording (recording, compile, update); raises
  /// Error(concurrent_use) when another thread is inside such a call or reads it as a body.
  class UseGuard {
   public:
    /// `where`: the user's call being recorded, which errors about its command name until
    /// the command exists (none when default).
    explicit UseGuard(const Recording& rec, std::source_location where = {}) : rec_(rec) {
      // Inline: every call on a handle takes one. One locked instruction, not two: taken by
      // exchanging 0 for 1, given back by a plain release store (a command recorded with an
      // edge takes two guards; their four locked instructions were 5-10% of recording it).
      // The exchange orders the readers_ load after it, as ReadGuard's increment orders its
      // users_ load: the two never both pass.
      int idle = 0;
      const bool taken = rec_.users_.compare_exchange_strong(idle, 1);
      if (!taken || rec_.readers_.load() != 0) [[unlikely]] rec_.refuse_use(taken);
      rec_.site_ = where;
    }
    ~UseGuard() {
      rec_.site_ = {};
      rec_.users_.store(0, std::memory_order_release);
    }
    UseGuard(const UseGuard&) = delete;
    UseGuard& operator=(const UseGuard&) = delete;

   private:
    const Recording& rec_;
  };
  /// Held by a call that reads the recording as a body (execute, a conditional); several may read
  /// at once, from several threads; raises Error(concurrent_use) while a UseGuard is held.
  class ReadGuard {
   public:
    explicit ReadGuard(const Recording& rec);
    ~ReadGuard();
    ReadGuard(const ReadGuard&) = delete;
    ReadGuard& operator=(const ReadGuard&) = delete;

   private:
    const Recording& rec_;
  };

 private:
  [[noreturn]] void refuse_index(CommandRef ref) const;
  [[noreturn]] void refuse_sealed(const char* action) const;
  [[noreturn]] void refuse_self_edge(std::uint32_t command) const;
  // Gives the guard back when `taken`, and throws Error(concurrent_use).
  [[noreturn]] void refuse_use(bool taken) const;
  // Error(foreign_handle) when a value of the command being recorded (of `kind`) reaches
  // another buffer's transient memory; only worth calling while any_live_transients().
  void refuse_foreign_transients(CommandKind kind);
  // Error(wrong_state) once the recording runs as a body; `what` names what was given.
  void require_costs_open(const std::string& what) const;

  std::uint64_t id_;
  std::string name_;
  std::atomic<bool> sealed_{false};
  std::atomic<bool> body_{false};  // sealed as another's body (seal_as_body)
  // The commands to record into or change: copied first while a plan shares them.
  std::vector<CommandRecord>& own_commands() {
    if (commands_.use_count() > 1) {
      commands_ = std::make_shared<std::vector<CommandRecord>>(*commands_);
    }
    return *commands_;
  }

  std::shared_ptr<std::vector<CommandRecord>> commands_ =
      std::make_shared<std::vector<CommandRecord>>();
  std::vector<DeclaredAccess> declared_;
  std::shared_ptr<LabelStore> labels_;
  std::vector<Edge> edges_;
  std::vector<Edge> programmatic_edges_;
  std::shared_ptr<ArgumentStore> arguments_ = std::make_shared<ArgumentStore>();
  std::optional<std::uint32_t> last_barrier_;
  std::uint32_t segment_begin_ = 0;  // first command after the last barrier
  std::uint32_t depth_ = 0;
  std::uint64_t expanded_ = 0;
  std::uint32_t allocations_ = 0;                          // alloc commands
  std::unordered_map<std::uint32_t, std::uint32_t> freed_;  // alloc command -> its free
  // Changing and reading calls in progress: each side increments its own count, then looks at
  // the other's (sequentially consistent), so two that overlap cannot both miss each other.
  mutable std::atomic<int> users_{0};
  mutable std::atomic<int> readers_{0};
  mutable std::source_location site_{};  // the record call in progress (UseGuard), if given
};

/// Deepest nesting of executed buffers and conditional bodies a recording may have: every stage
/// walks bodies recursively, and a bound keeps each walk's stack small (1 KiB a level at most).
inline constexpr std::uint32_t max_nesting_depth = 64;
/// Most commands a recording may expand to (executed buffers in place, each conditional body
/// once): executing a buffer twice per level doubles the size with every level.
inline constexpr std::uint64_t max_expanded_size = 10'000'000;

/// The open recording behind a handle, or Error: invalid (default, moved-from), stale
/// (its buffer was destroyed or reset). Open recordings are registered by their buffers.
/// The handle's index is checked by Recording::require_command, under the caller's guard
/// (another thread may be appending commands until the guard is held).
Recording& resolve(CommandRef ref);
/// How messages name the command behind a handle of any buffer: "buffer/name" while its
/// buffer is open, "#index of a destroyed or reset buffer" after.
std::string describe_handle(CommandRef ref);
void register_recording(Recording& rec);
void unregister_recording(const Recording& rec) noexcept;

}  // namespace cmdgraph::detail
