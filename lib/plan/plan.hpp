// Plan: the validated DAG of one recording, topologically ordered and transitively reduced,
// with everything a backend reads: the commands (payloads, names) and their values, levels,
// the critical path, and the plans of executed buffers and conditional bodies. A backend's only
// input; it never hands the recording itself down. Never calls CUDA.
#pragma once

#include "command/argument_store.hpp"
#include "command/edge.hpp"
#include "command/command_record.hpp"
#include "command/payloads.hpp"
#include "plan/adjacency.hpp"
#include "plan/hazards.hpp"
#include "plan/transients.hpp"

#include <cmdgraph/graph_shape.hpp>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace cmdgraph::detail {

class Recording;
struct GraphShaping;  // plan/shaping.hpp

// The DAG of a recording's structure: its edges, their order, reduction, levels and critical
// path. Made once, when a recording is first planned, and never changed after: a plan of the
// same structure with new values (plan/new_values.hpp) shares it, so a frame's update copies
// none of it.
struct PlanDag {
  std::vector<Edge> edges;              // the distinct recorded edges, before reduction
  std::vector<std::uint32_t> order;     // a topological order of command indices
  std::vector<std::uint32_t> position;  // position[c]: index of c in `order`
  Adjacency children;                   // the transitive reduction
  Adjacency parents;                    // its reverse
  std::vector<Edge> programmatic;       // reduced edges whose child may launch early (sorted)
  std::vector<std::uint32_t> level;     // longest chain from a source to c, 0 at sources
  std::uint32_t level_count = 0;
  std::vector<std::uint64_t> bottom;    // weight of the heaviest path from c to a sink, c included
  std::vector<std::uint32_t> critical_path;  // a heaviest source-to-sink path
};

struct Plan {
  std::uint64_t recording_id = 0;       // the recording it was built from (handles name it)
  std::string buffer_name;              // the command buffer's name
  // In recording order: the recording's own, shared (it copies before changing any).
  std::shared_ptr<const std::vector<CommandRecord>> commands;
  // The recorded values, shared with the recording (which copies before recording more) and
  // with executables until they write (backend/executable_values.hpp).
  std::shared_ptr<const ArgumentStore> values;
  const ArgumentStore& arguments() const noexcept { return *values; }
  std::shared_ptr<const PlanDag> dag;   // never null once built
  // Per command: the plans of its bodies (an executed buffer's, a conditional's in its kind's
  // order); empty for other kinds. Shared by a plan of new values whose bodies are the same.
  using BodyPlans = std::vector<std::vector<std::shared_ptr<const Plan>>>;
  std::shared_ptr<const BodyPlans> bodies;
  // Every command's access (declared, implied by its payload or transients, its bodies'),
  // command by command in one array: command c's ends at access_end[c] (see access_of).
  std::vector<MemoryAccess> access;
  std::vector<std::uint32_t> access_end;
  std::shared_ptr<const LabelStore> labels;  // what the recording's declarations point at
  HazardSummary hazards;                // what the access analysis did
  TransientMemory memory;               // its transients (alloc): uses, lifetimes, arena layout
  std::optional<GraphShape> shape;      // the graph shaping asked for (PlanOptions::shape)

  std::size_t size() const noexcept { return commands->size(); }
  const CommandRecord& command(std::uint32_t c) const { return (*commands)[c]; }
  const Payload& payload(std::uint32_t c) const { return command(c).payload; }
  CommandKind kind(std::uint32_t c) const noexcept { return kind_of(command(c).payload); }
  std::string name(std::uint32_t c) const { return command_name(command(c), c); }
  /// What command c touches: every access the hazard analysis sees (collect_access).
  std::span<const MemoryAccess> access_of(std::uint32_t c) const noexcept {
    const std::uint32_t begin = c == 0 ? 0 : access_end[c - 1];
    return {access.data() + begin, access_end[c] - begin};
  }
  /// The plans of command c's bodies: its executed buffer's, or its conditional bodies in its
  /// kind's order; empty for other kinds.
  std::span<const std::shared_ptr<const Plan>> bodies_of(std::uint32_t c) const noexcept {
    return (*bodies)[c];
  }
  /// The lane edges of the top level as `shape` asks (null without one): worked out when a
  /// graph is first built of the plan, once, and shared by every instance and clone (an update
  /// in place keeps its graph's and never asks). Thread-safe.
  std::shared_ptr<const GraphShaping> shaping() const;
  /// True when the reduced edge parent -> child is programmatic (EdgeKind::programmatic).
  bool is_programmatic(std::uint32_t parent, std::uint32_t child) const noexcept {
    const std::vector<Edge>& p = dag->programmatic;
    return !p.empty() && std::binary_search(p.begin(), p.end(), Edge{parent, child});
  }

 private:
  // shaping(), worked out at most once; a copy of the plan works it out again.
  struct ShapingOnce {
    std::once_flag once;
    std::shared_ptr<const GraphShaping> value;
    ShapingOnce() = default;
    ShapingOnce(const ShapingOnce&) noexcept {}
    ShapingOnce& operator=(const ShapingOnce&) noexcept { return *this; }
  };
  mutable ShapingOnce shaping_;
};

/// What a plan is built for.
struct PlanOptions {
  PlanOptions(Hazards hazards = Hazards::automatic, std::optional<GraphShape> shape = {})
      : hazards(hazards), shape(shape) {}
  Hazards hazards;  ///< the access analysis (plan/hazards.hpp)
  /// Lane edges for a CUDA graph (plan/shaping.hpp), when the plan is built for one.
  std::optional<GraphShape> shape;
};

/// Builds the plan of a recording and of every recording it executes (each once), as `options`
/// ask. Throws Error(cycle) naming the whole cycle, Error(hazard) listing unordered conflicts.
/// Iterative over commands: a 100,000-command chain is fine; bodies nest at most
/// max_nesting_depth levels (the recording checked that).
std::shared_ptr<const Plan> build_plan(const Recording& recording,
                                       const PlanOptions& options = {});

/// `edges` sorted, each once.
std::vector<Edge> distinct_edges(const std::vector<Edge>& edges);

/// Whether `edges` are sorted, each once, as distinct_edges returns them: recorded edges mostly
/// are (a chain's, a fork's, a join's), and then need no copy to be compared or hashed.
bool are_distinct(const std::vector<Edge>& edges) noexcept;

/// `full` and `programmatic` (each sorted and distinct) as one sorted distinct list: what
/// Plan::edges starts from.
std::vector<Edge> edge_union(const std::vector<Edge>& full, const std::vector<Edge>& programmatic);

/// How errors and traces name command `c` of `plan` in an executable whose top plan is
/// `root`: its own name at the top level, "buffer/name" inside executed buffers.
inline std::string command_label(const Plan& plan, std::uint32_t c, const Plan& root) {
  return &plan == &root ? plan.name(c) : plan.buffer_name + "/" + plan.name(c);
}

/// Commands of `plan` and of the bodies it runs that have a priority of their own.
std::size_t count_prioritised(const Plan& plan);

/// A scheduling weight per command kind: barriers and event commands cost nothing.
inline std::uint64_t schedule_weight(CommandKind kind) noexcept { return traits(kind).weight; }

}  // namespace cmdgraph::detail
