// BodyChanges: a byte comparison of each command's value slots.
#include "plan/body_changes.hpp"

namespace cmdgraph::detail {

std::vector<std::uint32_t> commands_with_other_values(const Plan& ran, const Plan& now) {
  std::vector<std::uint32_t> changed;
  for (std::uint32_t c = 0; c < now.size(); ++c) {
    const ArgumentStore::Slot first = c == 0 ? 0 : now.command(c - 1).slots_end;
    if (!ran.arguments().same_bytes(now.arguments(), first, now.command(c).slots_end)) {
      changed.push_back(c);
    }
  }
  return changed;
}

BodyChanges reversed(const BodyChanges& changes) {
  BodyChanges back;
  for (const auto& [pair, commands] : changes) {
    back.emplace(std::make_pair(pair.second, pair.first), commands);
  }
  return back;
}

std::size_t commands_in(const BodyChanges& changes) noexcept {
  std::size_t count = 0;
  for (const auto& [pair, commands] : changes) count += commands.size();
  return count;
}

}  // namespace cmdgraph::detail
