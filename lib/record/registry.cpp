// The registry of open recordings: what lets a command handle find its recording, or report
// that the buffer it came from was destroyed or reset.
#include "record/recording.hpp"

#include <cmdgraph/error.hpp>

#include <array>
#include <atomic>
#include <mutex>
#include <new>
#include <string>
#include <utility>
#include <unordered_map>

namespace cmdgraph::detail {
namespace {

struct Registry {
  std::mutex mutex;
  std::unordered_map<std::uint64_t, Recording*> open;
  // The names of the buffers closed last, by recording id, for errors about their stale
  // handles: a ring, so a program that makes and drops buffers for ever keeps a bounded few.
  static constexpr std::size_t remembered = 256;
  std::array<std::pair<std::uint64_t, std::string>, remembered> closed_names{};
  // The buffer recording `id` belonged to, when it closed recently enough to be remembered.
  std::string closed_name(std::uint64_t id) const {
    for (const auto& [closed_id, name] : closed_names) {
      if (closed_id == id) return "command buffer '" + name + "'";
    }
    return "a command buffer";
  }
};

// Counts unregistrations (changed under the registry's lock): a lookup made while it read n
// stays true while it reads n (ids are never reused). Beside the registry rather than in it,
// so that resolve()'s fast path reads it without the registry's initialisation guard.
constinit std::atomic<std::uint64_t> closed_count{0};

// The last recording this thread resolved. Handles come in runs on one buffer (a command,
// then its declarations and edges), and the registry's lock and lookup cost more than a
// declaration itself.
struct LastResolved {
  std::uint64_t id = 0;
  std::uint64_t closed = 0;
  Recording* rec = nullptr;
};
thread_local LastResolved last_resolved;
// Never destroyed: a recording may close during static destruction (a host pool's worker
// releasing the last launch of an executable whose plan holds bodies), after a registry
// destroyed before the pool would be gone.
Registry& registry() {
  static Registry& r = *new Registry;
  return r;
}

}  // namespace

void register_recording(Recording& rec) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  r.open.emplace(rec.id(), &rec);
}

void unregister_recording(const Recording& rec) noexcept {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  r.open.erase(rec.id());
  const std::uint64_t closed = closed_count.fetch_add(1, std::memory_order_release);
  auto& slot = r.closed_names[closed % Registry::remembered];
  slot.first = rec.id();
  try {
    slot.second = rec.name();
  } catch (const std::bad_alloc&) {  // errors then say "a command buffer"
    slot.first = 0;
  }
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
    return described + " of " + r.closed_name(ref.recording) + ", since destroyed or reset";
  }
  return it->second->name() + "/" + it->second->command_name(ref.index);
}

namespace {

// resolve() past the last recording this thread resolved: through the registry's lock.
[[gnu::noinline]] Recording& resolve_in_registry(CommandRef ref) {
  if (ref.recording == 0) {
    throw Error(errc::invalid_handle, "a default-constructed or moved-from command handle was used");
  }
  Registry& r = registry();
  std::unique_lock lock(r.mutex);
  const auto it = r.open.find(ref.recording);
  if (it == r.open.end()) {
    throw Error(errc::stale_handle, "a handle of command #" + std::to_string(ref.index) + " of " +
                                        r.closed_name(ref.recording) +
                                        " was used after that buffer was destroyed or reset");
  }
  last_resolved = {ref.recording, closed_count.load(std::memory_order_relaxed), it->second};
  return *it->second;
}

}  // namespace

Recording& resolve(CommandRef ref) {
  const LastResolved& last = last_resolved;
  // Id 0 is no recording's (a default or moved-from handle), nor the id of a cache never
  // filled: both go the slow way, which refuses the handle.
  if (last.id == ref.recording && ref.recording != 0 &&
      last.closed == closed_count.load(std::memory_order_acquire)) [[likely]] {
    return *last.rec;
  }
  return resolve_in_registry(ref);
}

}  // namespace cmdgraph::detail
