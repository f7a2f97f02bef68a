// Transient memory in a plan: scanning the recorded values for placeholders, lifetime checks
// by topological position (the arena layout is plan/arena_layout.cpp).
#include "plan/transients.hpp"

#include "plan/plan.hpp"

#include <cmdgraph/error.hpp>

#include <algorithm>
#include <cstdio>
#include <deque>
#include <numeric>
#include <span>

namespace cmdgraph::detail {
namespace {

std::string in_quotes(const std::string& s) { return "'" + s + "'"; }

std::string address(std::uintptr_t p) {
  char text[2 + 2 * sizeof(p) + 1];
  std::snprintf(text, sizeof(text), "0x%jx", static_cast<std::uintmax_t>(p));
  return text;
}

// The live placeholders of every recording, looked up without the registry's lock.
class LiveRanges {
 public:
  LiveRanges() {
    if (any_live_transients()) ranges_ = live_transients();
  }
  const TransientExtent* find(std::uintptr_t word) const noexcept {
    auto it = std::upper_bound(
        ranges_.begin(), ranges_.end(), word,
        [](std::uintptr_t w, const TransientExtent& r) { return w < r.base; });
    if (it == ranges_.begin()) return nullptr;
    --it;
    return word - it->base <= it->bytes ? &*it : nullptr;
  }
  bool empty() const noexcept { return ranges_.empty(); }

 private:
  std::vector<TransientExtent> ranges_;
};

[[noreturn]] void refuse_stray(const Plan& plan, std::uint32_t c, std::uintptr_t word, bool body) {
  const std::string name = body ? plan.buffer_name + "/" + plan.name(c) : plan.name(c);
  if (body) {
    throw Error(errc::unsupported,
                "command " + in_quotes(name) + " reaches transient memory (at " + address(word) +
                    ") inside an executed buffer or a body; transient memory reaches only "
                    "commands recorded in the buffer that allocates it",
                {name});
  }
  throw Error(errc::foreign_handle,
              "command " + in_quotes(name) + " reaches transient memory (at " + address(word) +
                  ") that command buffer " + in_quotes(plan.buffer_name) +
                  " does not allocate: a transient of another command buffer, or of one reset "
                  "since; transient memory is used in the buffer that allocates it",
              {name});
}

// The slots [first, end) holding command c's values.
std::pair<ArgumentStore::Slot, ArgumentStore::Slot> slots_of(const Plan& plan, std::uint32_t c) {
  return {c == 0 ? 0 : plan.command(c - 1).slots_end, plan.command(c).slots_end};
}

// True when a path of the plan's edges leads from `from` to `to` (or they are one command).
bool reaches(const Plan& plan, std::uint32_t from, std::uint32_t to) {
  if (from == to) return true;
  if (plan.dag->position[from] > plan.dag->position[to]) return false;
  std::vector<bool> seen(plan.size(), false);
  std::deque<std::uint32_t> open{from};
  seen[from] = true;
  while (!open.empty()) {
    const std::uint32_t v = open.front();
    open.pop_front();
    for (const std::uint32_t k : plan.dag->children[v]) {
      if (k == to) return true;
      if (!seen[k] && plan.dag->position[k] < plan.dag->position[to]) {
        seen[k] = true;
        open.push_back(k);
      }
    }
  }
  return false;
}

}  // namespace

std::uint32_t TransientMemory::find(std::uintptr_t word) const noexcept {
  auto it = std::upper_bound(by_base.begin(), by_base.end(), word,
                             [this](std::uintptr_t w, std::uint32_t t) {
                               return w < list[t].range->base();
                             });
  if (it == by_base.begin()) return none;
  --it;
  return list[*it].range->holds(word) ? *it : none;
}

std::uint32_t TransientMemory::allocated_by(std::uint32_t c) const noexcept {
  auto it = std::lower_bound(list.begin(), list.end(), c,
                             [](const TransientInfo& t, std::uint32_t a) { return t.alloc < a; });
  return it != list.end() && it->alloc == c ? static_cast<std::uint32_t>(it - list.begin()) : none;
}

std::uint32_t TransientMemory::released_by(std::uint32_t c) const noexcept {
  auto it = std::lower_bound(by_release.begin(), by_release.end(), c,
                             [this](std::uint32_t t, std::uint32_t f) { return list[t].release < f; });
  return it != by_release.end() && list[*it].release == c ? *it : none;
}

std::size_t TransientMemory::footprint(std::uint32_t t) const noexcept {
  const std::size_t bytes = list[t].range->bytes();
  return (bytes + alignment - 1) / alignment * alignment;
}

void collect_transients(Plan& plan, bool body) {
  TransientMemory& m = plan.memory;
  for (std::uint32_t c = 0; c < plan.size(); ++c) {
    if (auto range = allocated(plan.payload(c))) {
      m.list.push_back({c, TransientMemory::none, std::move(range), 0, plan.name(c)});
    }
  }
  for (std::uint32_t c = 0; c < plan.size(); ++c) {
    if (const auto alloc = freed_allocation(plan.payload(c))) {
      m.by_release.push_back(m.allocated_by(*alloc));  // in order of the frees
      m.list[m.by_release.back()].release = c;
    }
  }
  m.by_base.resize(m.list.size());
  std::iota(m.by_base.begin(), m.by_base.end(), 0u);
  std::sort(m.by_base.begin(), m.by_base.end(), [&](std::uint32_t a, std::uint32_t b) {
    return m.list[a].range->base() < m.list[b].range->base();
  });
  const LiveRanges live;
  if (live.empty()) return;  // no placeholder exists anywhere: no value can hold one
  for (std::uint32_t c = 0; c < plan.size(); ++c) {
    const auto [first, end] = slots_of(plan, c);
    for (ArgumentStore::Slot s = first; s < end; ++s) {
      for_each_word(plan.arguments().data(s), plan.arguments().size(s),
                    [&](std::uint32_t at, std::uintptr_t word) {
                      if (!live.find(word)) return;
                      const std::uint32_t t = m.find(word);
                      if (t == TransientMemory::none) refuse_stray(plan, c, word, body);
                      m.sites.push_back({s, at, t, word - m.list[t].range->base()});
                      m.uses.push_back({c, t});
                    });
    }
  }
  std::sort(m.uses.begin(), m.uses.end());
  m.uses.erase(std::unique(m.uses.begin(), m.uses.end()), m.uses.end());
}

void add_transient_access(const Plan& plan, std::uint32_t c, std::vector<MemoryAccess>& out,
                          std::size_t from) {
  const TransientMemory& m = plan.memory;
  if (m.empty()) return;
  auto [first, last] = std::equal_range(m.uses.begin(), m.uses.end(), TransientUse{c, 0},
                                        [](const TransientUse& a, const TransientUse& b) {
                                          return a.command < b.command;
                                        });
  for (auto it = first; it != last; ++it) {
    out.push_back(transient_use(*m.list[it->transient].range));
  }
  for (MemoryAccess& a : std::span(out).subspan(from)) {
    if (a.role == TransientRole::none || a.label) continue;
    if (const std::uint32_t t = m.find(a.begin); t != TransientMemory::none) {
      a.label = &m.list[t].name;  // the plan's own: it lives as long as the access
    }
  }
}

void check_transients(Plan& plan) {
  const TransientMemory& m = plan.memory;
  if (m.empty()) return;
  const std::vector<std::uint32_t>& position = plan.dag->position;
  for (const TransientInfo& t : m.list) {
    if (t.release != TransientMemory::none && position[t.release] < position[t.alloc]) {
      throw Error(errc::hazard,
                  "command buffer " + in_quotes(plan.buffer_name) + ": transient memory " +
                      in_quotes(plan.name(t.alloc)) + " is freed by " + in_quotes(plan.name(t.release)) +
                      " before its allocation (the edges order the free first)",
                  {plan.name(t.release), plan.name(t.alloc)});
    }
  }
  // Every command touching a transient's bytes is ordered with its allocation and free (the
  // hazard analysis saw to it), so its topological position says on which side it runs.
  for (std::uint32_t c = 0; c < plan.size(); ++c) {
    for (const MemoryAccess& a : plan.access_of(c)) {
      const std::uint32_t t = m.find(a.begin);
      if (t == TransientMemory::none || c == m.list[t].alloc || c == m.list[t].release) continue;
      const TransientInfo& info = m.list[t];
      // Built only for an error: once per access, it was a tenth of this loop at scale.
      const auto what = [&] {
        return "command buffer " + in_quotes(plan.buffer_name) + ": command " +
               in_quotes(plan.name(c)) + " uses transient memory " + in_quotes(plan.name(info.alloc));
      };
      if (plan.dag->position[c] < plan.dag->position[info.alloc]) {
        throw Error(errc::hazard,
                    what() + " before its allocation (the edges order " +
                        in_quotes(plan.name(info.alloc)) + " after it)",
                    {plan.name(c), plan.name(info.alloc)});
      }
      if (info.release != TransientMemory::none &&
          plan.dag->position[c] > plan.dag->position[info.release]) {
        throw Error(errc::hazard,
                    what() + " after its free (the edges order " + in_quotes(plan.name(info.release)) +
                        " before it)",
                    {plan.name(c), plan.name(info.release)});
      }
    }
  }
  lay_out_arena(plan);
}

namespace {
// Calls found(offset, transient, word) for each word of `bytes` bytes at `data` pointing into
// one of `memory`'s transients; throws, naming `who`, for one pointing into another plan's.
template <class Found>
void new_value_words(const TransientMemory& memory, const LiveRanges& live, const void* data,
                     std::size_t bytes, const Describe& who, Found&& found) {
  for_each_word(data, bytes, [&](std::uint32_t at, std::uintptr_t word) {
    if (!live.find(word)) return;
    const std::uint32_t t = memory.find(word);
    if (t == TransientMemory::none) {
      throw Error(errc::foreign_handle,
                  who() + ": a new value reaches transient memory (at " + address(word) +
                      ") this executable does not allocate");
    }
    found(at, t, word);
  });
}
}  // namespace

std::vector<TransientSite> find_sites(const TransientMemory& memory, const ArgumentStore& values,
                                      ArgumentStore::Slot first, std::uint32_t count,
                                      const Describe& who) {
  std::vector<TransientSite> sites;
  const LiveRanges live;
  if (live.empty()) return sites;
  for (ArgumentStore::Slot s = first; s < first + count; ++s) {
    new_value_words(memory, live, values.data(s), values.size(s), who,
                    [&](std::uint32_t at, std::uint32_t t, std::uintptr_t word) {
                      sites.push_back({s, at, t, word - memory.list[t].range->base()});
                    });
  }
  return sites;
}

std::vector<std::uint32_t> transients_reached(const TransientMemory& memory, const void* data,
                                              std::size_t bytes, const Describe& who) {
  std::vector<std::uint32_t> reached;
  const LiveRanges live;
  if (live.empty()) return reached;
  new_value_words(memory, live, data, bytes, who,
                  [&](std::uint32_t, std::uint32_t t, std::uintptr_t) { reached.push_back(t); });
  return reached;
}

void require_within_lifetime(const Plan& plan, std::uint32_t c, std::uint32_t t,
                             const Describe& who) {
  const TransientMemory& m = plan.memory;
  if (std::binary_search(m.uses.begin(), m.uses.end(), TransientUse{c, t})) return;
  const TransientInfo& info = m.list[t];
  if (!reaches(plan, info.alloc, c) || c == info.alloc) {
    throw Error(errc::hazard,
                who() + " would make it use transient memory " + in_quotes(plan.name(info.alloc)) +
                    " with no path from its allocation to it",
                {plan.name(c), plan.name(info.alloc)});
  }
  if (info.release != TransientMemory::none &&
      (!reaches(plan, c, info.release) || c == info.release)) {
    throw Error(errc::hazard,
                who() + " would make it use transient memory " + in_quotes(plan.name(info.alloc)) +
                    " with no path from it to its free " + in_quotes(plan.name(info.release)),
                {plan.name(c), plan.name(info.release)});
  }
}

}  // namespace cmdgraph::detail
