// plan_of_new_values: the plan of a re-recorded buffer that differs from an executable's plan
// in values alone, made from that plan at the cost of a comparison instead of an analysis.
#pragma once

#include "plan/body_changes.hpp"
#include "plan/plan.hpp"

#include <cstddef>
#include <memory>

namespace cmdgraph::detail {

/// What plan_of_new_values found.
struct NewValues {
  /// The plan of the recording; null when more than values differ.
  std::shared_ptr<const Plan> plan;
  /// Commands of the bodies it runs whose values differ from those `before`'s bodies ran with.
  BodyChanges bodies;
};

/// The plan of `recording` when it records what `before` was built from but for values that
/// change no command's access, at any depth: `before`'s order, reduction, levels and hazard
/// analysis with the recording's commands, values and declarations. A body (an executed
/// buffer, a conditional's) re-recorded with the very values of the one `before` ran keeps
/// `before`'s plan of it; one with new values gets a plan of the same kind. Null when more
/// differs (edges, payloads, names, hints, access, a body's), when `before` or a body has
/// transient memory or inferred edges: build_plan then decides.
NewValues plan_of_new_values(const Plan& before, const Recording& recording);

}  // namespace cmdgraph::detail
