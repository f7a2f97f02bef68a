// plan_of_new_values: command by command against the executable's plan, bodies included, each
// body compared once; nothing is analysed again.
#include "plan/new_values.hpp"

#include "plan/hazards.hpp"
#include "record/recording.hpp"

#include <algorithm>
#include <map>
#include <utility>

namespace cmdgraph::detail {
namespace {

// The same command, but for its values and the recordings it runs as bodies: every field of
// the two records equal but those.
bool same_but_values(const CommandRecord& a, const CommandRecord& b) {
  return equal_but_bodies(a.payload, b.payload) && a.name == b.name &&
         a.slots_end == b.slots_end && a.hints == b.hints;
}

bool same_access(const MemoryAccess& a, const MemoryAccess& b) {
  return a.begin == b.begin && a.end == b.end && a.origin == b.origin &&
         a.element_size == b.element_size && a.mode == b.mode && a.role == b.role &&
         (a.label == b.label || (a.label && b.label && *a.label == *b.label));
}

// Whether `rec`'s edges, each once, are `distinct` (a plan's edges).
bool same_edges(const Recording& rec, const std::vector<Edge>& distinct) {
  if (rec.programmatic_edges().empty() && are_distinct(rec.edges())) {
    return rec.edges() == distinct;  // as recorded edges mostly are: nothing to copy
  }
  return edge_union(distinct_edges(rec.edges()), distinct_edges(rec.programmatic_edges())) ==
         distinct;
}

// Whether `plan` (of `rec`'s values) still touches no memory the hazard analysis looks at, as
// `before` touched none: nothing declared, no command's values imply access, and its bodies
// are the plans `before` ran (whose access was part of before's). Then its access is before's,
// and the hazard analysis would find what it found; a frame costs a look at each command, not
// its access collected again (a fifth of a values-only update's instructions, for a plan that
// declares none, in bench_frames_host).
bool touches_nothing(const Plan& plan, const Recording& rec, const Plan& before, bool kept) {
  if (!before.access.empty() || !rec.declared().empty() || !kept) return false;
  std::vector<MemoryAccess> implied;
  for (std::uint32_t c = 0; c < plan.size(); ++c) {
    add_implied_access(plan.payload(c), plan.arguments(), implied);
    if (!implied.empty()) return false;
  }
  return true;
}

// The bodies met so far, by the plan `before` ran them with and the recording run now: each
// compared once however many commands run it.
struct Scan {
  std::map<std::pair<const Plan*, const Recording*>, std::shared_ptr<const Plan>> bodies;
  BodyChanges changes;
};

std::shared_ptr<const Plan> body_plan(const std::shared_ptr<const Plan>& before,
                                      const Recording& rec, Scan& scan);

// The plan of `rec` made of `before`, or null when more than values differ. `kept` says
// whether every body kept the plan `before` ran it with.
std::shared_ptr<Plan> with_new_values(const Plan& before, const Recording& rec, Scan& scan,
                                      bool& kept) {
  const std::vector<CommandRecord>& commands = rec.commands();
  if (commands.size() != before.size() || rec.name() != before.buffer_name ||
      !before.memory.list.empty() || !before.hazards.inferred.empty()) {
    return nullptr;
  }
  kept = true;
  std::shared_ptr<Plan::BodyPlans> bodies;  // before's, copied at the first body that changed
  for (std::uint32_t c = 0; c < commands.size(); ++c) {
    if (!same_but_values(before.command(c), commands[c])) return nullptr;
    const auto was = bodies_of(before.payload(c));
    const auto now = bodies_of(commands[c].payload);
    for (std::size_t b = 0; b < now.size(); ++b) {
      if (now[b] == was[b]) continue;  // the very recording `before` ran
      const std::shared_ptr<const Plan>& ran = before.bodies_of(c)[b];
      std::shared_ptr<const Plan> plan = body_plan(ran, *now[b], scan);
      if (!plan) return nullptr;
      if (plan == ran) continue;
      if (kept) bodies = std::make_shared<Plan::BodyPlans>(*before.bodies);
      kept = false;
      (*bodies)[c][b] = std::move(plan);
    }
  }
  if (!same_edges(rec, before.dag->edges)) return nullptr;

  auto plan = std::make_shared<Plan>(before);
  plan->recording_id = rec.id();
  plan->commands = rec.shared_commands();
  plan->values = rec.shared_arguments();
  plan->labels = rec.labels();
  if (!kept) plan->bodies = std::move(bodies);  // else before's, shared
  if (touches_nothing(*plan, rec, before, kept)) return plan;  // before's hazards, none
  plan->access.clear();
  plan->access_end.clear();
  collect_access(*plan, rec.declared(), before.hazards.requested);
  // The same access: the hazard analysis would find what it found for `before`.
  if (!std::equal(plan->access.begin(), plan->access.end(), before.access.begin(),
                  before.access.end(), same_access) ||
      plan->access_end != before.access_end || plan->hazards.applied != before.hazards.applied) {
    return nullptr;
  }
  plan->hazards = before.hazards;
  return plan;
}

// The plan of body `rec` where `before` ran: `before` itself when its values and bodies are
// those `before` ran with (nothing updates a body's values once compiled), else a new one,
// its commands with new values noted.
std::shared_ptr<const Plan> body_plan(const std::shared_ptr<const Plan>& before,
                                      const Recording& rec, Scan& scan) {
  const auto key = std::make_pair(before.get(), &rec);
  if (const auto met = scan.bodies.find(key); met != scan.bodies.end()) return met->second;
  bool kept = false;
  std::shared_ptr<const Plan> plan = with_new_values(*before, rec, scan, kept);
  if (plan) {
    std::vector<std::uint32_t> changed = commands_with_other_values(*before, *plan);
    if (changed.empty() && kept) {
      plan = before;
    } else {
      scan.changes.emplace(std::make_pair(before.get(), plan.get()), std::move(changed));
    }
  }
  scan.bodies.emplace(key, plan);
  return plan;
}

}  // namespace

NewValues plan_of_new_values(const Plan& before, const Recording& recording) {
  Scan scan;
  bool kept = false;
  std::shared_ptr<const Plan> plan = with_new_values(before, recording, scan, kept);
  if (!plan) return {};
  return {std::move(plan), std::move(scan.changes)};
}

}  // namespace cmdgraph::detail
