// structural_difference: whether a re-recorded plan can replace an executable's plan in place.
#pragma once

#include "plan/plan.hpp"

#include <string>

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

}  // namespace cmdgraph::detail
