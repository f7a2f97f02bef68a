// structural_difference: command by command, then edge by edge, naming the first difference.
#include "plan/compare.hpp"

#include <algorithm>
#include <cstring>
#include <span>
#include <utility>

namespace cmdgraph::detail {
namespace {

std::string in_quotes(const std::string& s) { return "'" + s + "'"; }

// The roots of the two executables, to name commands of either side as errors do.
struct Roots {
  const Plan& before;
  const Plan& now;
};

// Whether command `c`'s value slots hold the same bytes in both stores. `alike`: the stores
// are laid out alike as a whole, so the command's bytes compare in place, without asking where
// each store holds them.
bool same_values(const ArgumentStore& current, const Plan& now, std::uint32_t c, bool alike) {
  const ArgumentStore::Slot first = c == 0 ? 0 : now.command(c - 1).slots_end;
  const ArgumentStore::Slot end = now.command(c).slots_end;
  if (!alike) return current.same_bytes(now.arguments(), first, end);
  const std::span<const std::byte> mine = current.bytes_of(first, end);
  return mine.empty() || std::memcmp(mine.data(), now.arguments().data(first), mine.size()) == 0;
}

// The first edge out of `c` that one plan has and the other lacks, as a sentence.
std::string edge_difference(const Plan& before, const Plan& now, std::uint32_t c,
                            const Roots& roots) {
  const auto was = before.dag->children[c], is = now.dag->children[c];
  for (std::uint32_t k : is) {
    if (std::find(was.begin(), was.end(), k) == was.end()) {
      return "has a new edge to " + in_quotes(command_label(now, k, roots.now));
    }
  }
  for (std::uint32_t k : was) {
    if (std::find(is.begin(), is.end(), k) == is.end()) {
      return "lost its edge to " + in_quotes(command_label(before, k, roots.before));
    }
  }
  return "has different dependants";
}

Difference difference_in(const Plan& before, const Plan& now, const Roots& roots) {
  const std::size_t common = std::min(before.size(), now.size());
  for (std::uint32_t c = 0; c < common; ++c) {
    const Payload& a = before.payload(c);
    const Payload& b = now.payload(c);
    auto differs = [&](const std::string& how) {  // named only once it differs
      const std::string name = command_label(now, c, roots.now);
      return Difference{"command " + in_quotes(name) + " " + how, name};
    };
    if (kind_of(a) != kind_of(b)) {
      return differs(std::string("is a ") + to_string(kind_of(b)) + ", was a " +
                     to_string(kind_of(a)));
    }
    if (code_of(a) != code_of(b)) return differs("runs a different kernel");
    const auto ka = before.dag->children[c], kb = now.dag->children[c];
    if (!std::equal(ka.begin(), ka.end(), kb.begin(), kb.end())) {
      return differs(edge_difference(before, now, c, roots));
    }
    if (before.command(c).hints.priority != now.command(c).hints.priority) {
      return differs("has another priority");
    }
    if (before.command(c).hints.update_free != now.command(c).hints.update_free) {
      return differs(now.command(c).hints.update_free ? "is update-free, was not"
                                                      : "is not update-free, was");
    }
    for (std::uint32_t k : kb) {
      if (before.is_programmatic(c, k) != now.is_programmatic(c, k)) {
        return differs(std::string("has a ") +
                       (now.is_programmatic(c, k) ? "programmatic" : "full") + " edge to " +
                       in_quotes(command_label(now, k, roots.now)) + ", was " +
                       (now.is_programmatic(c, k) ? "full" : "programmatic"));
      }
    }
    const auto was = before.bodies_of(c), is = now.bodies_of(c);
    if (was.size() != is.size()) {
      return differs("runs " + std::to_string(is.size()) + " bodies, ran " +
                     std::to_string(was.size()));
    }
    for (std::size_t b = 0; b < was.size(); ++b) {
      if (Difference inner = difference_in(*was[b], *is[b], roots)) return inner;
    }
  }
  if (before.size() == now.size()) return {};
  // The first command one side has and the other lacks.
  const bool grew = now.size() > before.size();
  const auto first = static_cast<std::uint32_t>(common);
  const std::string name = grew ? command_label(now, first, roots.now)
                                : command_label(before, first, roots.before);
  return {"command buffer " + in_quotes(now.buffer_name) + " has " + std::to_string(now.size()) +
              " commands, the executable " + std::to_string(before.size()) + ": command " +
              in_quotes(name) + (grew ? " is new" : " is gone"),
          name};
}

}  // namespace

Difference structural_difference(const Plan& before, const Plan& now) {
  return difference_in(before, now, Roots{before, now});
}

namespace {

// The same command but for its values and the plans of its bodies.
bool same_but_values(const CommandRecord& was, const CommandRecord& is) {
  return was.slots_end == is.slots_end && was.name == is.name &&
         equal_but_bodies(was.payload, is.payload);
}

// The commands of body `now` (of the structure of `before`, which the executable ran) whose
// values differ from before's, and those of its bodies, each pair compared once (`changes`,
// where one body may run where two different ones ran, so a body is known by both); false
// when one differs in more than values.
bool body_changes(const Plan& before, const Plan& now, BodyChanges& changes) {
  if (&before == &now || changes.contains({&before, &now})) return true;
  if (!before.memory.list.empty() || !now.memory.list.empty() ||
      before.buffer_name != now.buffer_name) {
    return false;
  }
  for (std::uint32_t c = 0; c < now.size(); ++c) {
    if (!same_but_values(before.command(c), now.command(c))) return false;
  }
  changes.emplace(std::make_pair(&before, &now), commands_with_other_values(before, now));
  for (std::uint32_t c = 0; c < now.size(); ++c) {
    for (std::size_t b = 0; b < now.bodies_of(c).size(); ++b) {
      if (!body_changes(*before.bodies_of(c)[b], *now.bodies_of(c)[b], changes)) return false;
    }
  }
  return true;
}

}  // namespace

std::optional<ValueChanges> changed_values(const Plan& before, const ArgumentStore& current,
                                           const Plan& now) {
  if (!before.memory.list.empty() || !now.memory.list.empty() ||
      before.buffer_name != now.buffer_name || current.slot_count() != now.values->slot_count()) {
    return std::nullopt;
  }
  ValueChanges changes;
  for (std::uint32_t c = 0; c < now.size(); ++c) {
    if (!same_but_values(before.command(c), now.command(c))) return std::nullopt;
    for (std::size_t b = 0; b < now.bodies_of(c).size(); ++b) {
      if (!body_changes(*before.bodies_of(c)[b], *now.bodies_of(c)[b], changes.bodies)) {
        return std::nullopt;
      }
    }
  }
  auto top = commands_with_new_values(current, now);
  if (!top) return std::nullopt;
  changes.top = std::move(*top);
  return changes;
}

std::optional<std::vector<std::uint32_t>> commands_with_new_values(const ArgumentStore& current,
                                                                   const Plan& now) {
  const bool alike = current.laid_out_alike(now.arguments());  // as a frame's values mostly are
  std::vector<std::uint32_t> changed;
  for (std::uint32_t c = 0; c < now.size(); ++c) {
    if (same_values(current, now, c, alike)) continue;
    if (!traits(now.kind(c)).updatable) return std::nullopt;
    changed.push_back(c);
  }
  return changed;
}

}  // namespace cmdgraph::detail
