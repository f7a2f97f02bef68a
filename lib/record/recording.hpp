// Recording: what a CommandBuffer holds, commands with their payloads, names and edges.
// The build stage reads it; once sealed it is immutable and shared by every plan built from it.
#pragma once

#include "record/argument_store.hpp"

#include <cmdgraph/command.hpp>
#include <cmdgraph/detail/specs.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace cmdgraph::detail {

class EventState;
class Recording;

// Payloads keep what never changes; values update() may change live in the ArgumentStore
// and are named by slot.
struct KernelPayload {
  const void* function;
  ArgumentStore::Slot config;       // LaunchConfig
  ArgumentStore::Slot first_param;  // then param_count consecutive slots
  std::uint32_t param_count;
};
struct ParallelForPayload {
  ArgumentStore::Slot functor;  // the kernel's (f, n): functor, then the count (std::size_t)
  HostInvoke host;
  const void* device_kernel;
  ArgumentStore::Slot count() const noexcept { return functor + 1; }
};
struct CopyPayload {
  ArgumentStore::Slot spec;  // CopySpec
};
struct FillPayload {
  ArgumentStore::Slot spec;  // FillSpec
};
struct HostPayload {
  std::shared_ptr<HostTask> task;
};
struct EventPayload {
  std::shared_ptr<EventState> event;
};
struct NestedPayload {
  std::shared_ptr<const Recording> recording;
};
struct CapturePayload {
  std::shared_ptr<CaptureTask> task;
};
struct BarrierPayload {};
struct LoopPayload {
  std::shared_ptr<const Recording> body;
  ArgumentStore::Slot condition;  // the condition functor
  HostCondition host;
  const void* device_kernel;
};

using Payload = std::variant<KernelPayload, ParallelForPayload, CopyPayload, FillPayload,
                             HostPayload, EventPayload, NestedPayload, CapturePayload,
                             BarrierPayload, LoopPayload>;

struct RecordedCommand {
  CommandKind kind;
  Payload payload;
  std::string name;  // empty: the default "kind#index"
};

struct Edge {
  std::uint32_t parent;
  std::uint32_t child;
};

class Recording {
 public:
  explicit Recording(std::string name);
  Recording(const Recording&) = delete;
  Recording& operator=(const Recording&) = delete;
  ~Recording();

  std::uint64_t id() const noexcept { return id_; }
  const std::string& name() const noexcept { return name_; }
  bool sealed() const noexcept { return sealed_; }
  void seal() noexcept { sealed_ = true; }
  void unseal() noexcept { sealed_ = false; }

  /// Appends a command, after the last barrier if there is one. Throws when sealed.
  CommandRef add(CommandKind kind, Payload payload);
  /// Adds parent -> child; validates both.
  void add_edge(std::uint32_t parent, std::uint32_t child);
  /// Room for `count` more edges, so adding them cannot fail half-way. Grows geometrically:
  /// reserving exact sizes call after call would copy the whole list every time.
  void reserve_edges(std::size_t count) {
    if (edges_.capacity() - edges_.size() < count) {
      edges_.reserve(std::max(edges_.size() + count, 2 * edges_.capacity()));
    }
  }
  /// Closes the current barrier segment: every command since the previous barrier (or that
  /// barrier itself) precedes the new barrier command, which precedes all later commands.
  CommandRef add_barrier();
  void set_name(std::uint32_t index, std::string_view name);

  /// The command's name: its own, or "kind#index".
  std::string command_name(std::uint32_t index) const;
  /// "buffer/command", for messages about commands of nested buffers.
  std::string qualified_name(std::uint32_t index) const;

  const std::vector<RecordedCommand>& commands() const noexcept { return commands_; }
  const std::vector<Edge>& edges() const noexcept { return edges_; }
  const ArgumentStore& arguments() const noexcept { return arguments_; }
  ArgumentStore& arguments() noexcept { return arguments_; }

  /// Throws Error(wrong_state) when sealed, naming the buffer and what was attempted.
  void require_open(const char* action) const;

  /// Raises Error(concurrent_use) when another thread is inside a recording call.
  class UseGuard {
   public:
    explicit UseGuard(const Recording& rec);
    ~UseGuard();
    UseGuard(const UseGuard&) = delete;
    UseGuard& operator=(const UseGuard&) = delete;

   private:
    const Recording& rec_;
  };

 private:
  std::uint64_t id_;
  std::string name_;
  bool sealed_ = false;
  std::vector<RecordedCommand> commands_;
  std::vector<Edge> edges_;
  ArgumentStore arguments_;
  std::optional<std::uint32_t> last_barrier_;
  std::uint32_t segment_begin_ = 0;  // first command after the last barrier
  mutable std::atomic<int> users_{0};
};

/// The open recording behind a handle, or Error: invalid (default, moved-from), stale
/// (its buffer was destroyed or reset). Open recordings are registered by their buffers.
Recording& resolve(CommandRef ref);
void register_recording(Recording& rec);
void unregister_recording(const Recording& rec) noexcept;

}  // namespace cmdgraph::detail
