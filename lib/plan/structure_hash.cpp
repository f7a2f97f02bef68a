// structure_hash: commands and their bodies, then the sorted distinct edges, mixed into 64 bits.
#include "plan/structure_hash.hpp"

#include "command/transient_range.hpp"
#include "plan/plan.hpp"

#include <bit>
#include <vector>

namespace cmdgraph::detail {
namespace {

// SplitMix64's finaliser: every input bit reaches every output bit.
std::uint64_t mix(std::uint64_t x) noexcept {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A multiply and a rotation a word, the finaliser once at the end: a few instructions a word,
// where a finaliser a word made the hash a fifth of a cache hit's host time. Order matters, and
// a collision costs a comparison, never a wrong hit.
struct Hasher {
  std::uint64_t h = 0x9e3779b97f4a7c15ULL;
  void add(std::uint64_t v) noexcept { h = std::rotl((h ^ v) * 0xbf58476d1ce4e5b9ULL, 29); }
  std::uint64_t done() const noexcept { return mix(h); }
};

std::uint64_t key(const Edge& e) noexcept { return std::uint64_t{e.parent} << 32 | e.child; }

// The edges as distinct_edges gives them: in one pass as recorded when they come sorted and
// each once (as recorded edges nearly always do), else a sorted copy.
void add_edges(Hasher& hasher, const std::vector<Edge>& recorded) {
  Hasher edges = hasher;
  edges.add(recorded.size());
  std::uint64_t last = 0;
  bool first = true;
  for (const Edge& e : recorded) {
    const std::uint64_t k = key(e);
    if (!first && k <= last) {
      const std::vector<Edge> distinct = distinct_edges(recorded);
      hasher.add(distinct.size());
      for (const Edge& d : distinct) hasher.add(key(d));
      return;
    }
    edges.add(k);
    last = k;
    first = false;
  }
  hasher = edges;
}

}  // namespace

std::uint64_t structure_hash(const Recording& recording) {
  Hasher hasher;
  const std::vector<CommandRecord>& commands = recording.commands();
  hasher.add(commands.size());
  for (const CommandRecord& command : commands) {
    // Kind, hints and body count in one word: a word less, a step less.
    const std::optional<PriorityRequest>& priority = command.hints.priority;
    const auto bodies = bodies_of(command.payload);
    const std::uint64_t flags = std::uint64_t{command.hints.update_free} |
                                std::uint64_t{priority.has_value()} << 1 |
                                std::uint64_t{priority && priority->native} << 2;
    const std::uint64_t level = priority ? static_cast<std::uint32_t>(priority->value) : 0U;
    hasher.add(command.payload.index() | flags << 8 | (bodies.size() & 0xffff) << 16 |
               level << 32);
    hasher.add(reinterpret_cast<std::uintptr_t>(code_of(command.payload)));
    if (const auto& transient = allocated(command.payload)) {
      hasher.add(transient->bytes());
      hasher.add(transient->element_size());
    }
    for (const auto& body : bodies) hasher.add(structure_hash(*body));
  }
  add_edges(hasher, recording.edges());
  add_edges(hasher, recording.programmatic_edges());
  return hasher.done();
}

}  // namespace cmdgraph::detail
