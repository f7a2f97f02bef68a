// structural_difference: whether a re-recorded plan can replace an executable's plan in place;
// changed_values, commands_with_new_values: whether only values changed, and of which commands.
#pragma once

#include "plan/body_changes.hpp"
#include "plan/plan.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cmdgraph::detail {

/// The first structural difference between two plans, if any.
struct Difference {
  std::string what;     // a sentence naming the command; empty when there is no difference
  std::string command;  // the command's (qualified) name
  explicit operator bool() const noexcept { return !what.empty(); }
};

/// No difference when `now` has the structure of `before`: the same commands in the same
/// order, of the same kinds, with the same kernels, priorities and (reduced) edges of the same
/// kinds, nested plans included.
Difference structural_difference(const Plan& before, const Plan& now);

/// The commands whose values an update changes.
struct ValueChanges {
  std::vector<std::uint32_t> top;  ///< top-level commands, in order
  BodyChanges bodies;              ///< commands of the bodies run
};

/// For `now` of the structure of `before`, when nothing but values differs: the top-level
/// commands whose values differ from `current` (the values of an executable of `before`, its
/// updates included), all of updatable kinds, and the commands of the bodies that differ from
/// those `before` ran. Every command of `now`, at any depth, must compare equal to its
/// counterpart (the same code and objects) but for values and bodies, and have its name.
/// Nullopt when more changed, or when a plan has transient memory (whose words each
/// executable rewrites). Costs a comparison of each command's value bytes.
std::optional<ValueChanges> changed_values(const Plan& before, const ArgumentStore& current,
                                           const Plan& now);

/// For `now` recording the very commands of the executable's plan but for their values (as
/// changed_values checks, or plan_of_new_values made it): the commands whose value bytes
/// differ from `current`, in order; nullopt when one of them is of a kind not updatable.
std::optional<std::vector<std::uint32_t>> commands_with_new_values(const ArgumentStore& current,
                                                                   const Plan& now);

}  // namespace cmdgraph::detail
