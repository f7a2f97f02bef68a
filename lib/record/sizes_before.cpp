// What the buffers given up last on each thread held, by name: a buffer made anew each frame
// under the same name starts with room for the last frame (as reset() gives).
#include "record/sizes_before.hpp"

#include <array>
#include <functional>
#include <string>

namespace cmdgraph::detail {
namespace {

// By the hash of the name; up to 64 names, so a thread that makes an engine's passes each
// frame keeps each one's (with 8, the 8 passes and the primary of bench_frames' frame pushed
// each other out in turn, and every pass grew as it recorded). A collision costs room, never a
// result.
struct HeldBefore {
  std::size_t name_hash = 0;
  RecordingSizes sizes;
};
thread_local std::array<HeldBefore, 64> held_before;
thread_local std::size_t held_before_next = 0;

}  // namespace

void remember_sizes(const Recording& rec) noexcept {
  const std::size_t hash = std::hash<std::string>{}(rec.name());
  HeldBefore* slot = nullptr;
  for (HeldBefore& h : held_before) {
    if (h.name_hash == hash) slot = &h;
  }
  if (!slot) slot = &held_before[held_before_next++ % held_before.size()];
  *slot = {hash, rec.sizes()};
}

void reserve_as_before(Recording& rec) {
  const std::size_t hash = std::hash<std::string>{}(rec.name());
  for (const HeldBefore& h : held_before) {
    if (h.name_hash == hash) rec.reserve(h.sizes);
  }
}

}  // namespace cmdgraph::detail
