// BodyChanges: the commands of an executable's bodies (executed buffers, conditionals' bodies)
// that a values-only update gives new values, found once per body however many commands run it.
#pragma once

#include "plan/plan.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

namespace cmdgraph::detail {

/// By the pair of a body's plan the executable ran and its plan now (of the same structure):
/// the body's commands whose value bytes differ, in order (none when only a body of its own
/// changed). Pairs of the very same plan are absent.
using BodyChanges = std::map<std::pair<const Plan*, const Plan*>, std::vector<std::uint32_t>>;

/// The commands of `now` whose value bytes differ from those of `ran` (of its structure).
std::vector<std::uint32_t> commands_with_other_values(const Plan& ran, const Plan& now);

/// The same commands, each pair the other way round: what gives them back the values before.
BodyChanges reversed(const BodyChanges& changes);

/// How many commands `changes` gives new values, each body counted once.
std::size_t commands_in(const BodyChanges& changes) noexcept;

}  // namespace cmdgraph::detail
