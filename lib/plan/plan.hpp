// Plan: the validated DAG of one recording, topologically ordered and transitively reduced,
// with the levels and critical path that backends use to schedule. Never calls CUDA.
#pragma once

#include "plan/adjacency.hpp"
#include "record/recording.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace cmdgraph::detail {

struct Plan {
  std::shared_ptr<const Recording> recording;
  std::vector<std::uint32_t> order;     // a topological order of command indices
  std::vector<std::uint32_t> position;  // position[c]: index of c in `order`
  Adjacency children;                   // the transitive reduction
  Adjacency parents;                    // its reverse
  std::size_t edges_recorded = 0;       // distinct recorded edges (duplicates dropped)
  std::vector<std::uint32_t> level;     // longest chain from a source to c, 0 at sources
  std::uint32_t level_count = 0;
  std::vector<std::uint64_t> bottom;    // weight of the heaviest path from c to a sink, c included
  std::vector<std::uint32_t> critical_path;  // a heaviest source-to-sink path
  std::vector<std::shared_ptr<const Plan>> nested;  // per command: the plan of its executed buffer or loop body

  std::size_t size() const noexcept { return order.size(); }
  const RecordedCommand& command(std::uint32_t c) const { return recording->commands()[c]; }
  std::string name(std::uint32_t c) const { return recording->command_name(c); }
};

/// Builds the plan of a recording and of every recording it executes. Throws Error(cycle)
/// naming the whole cycle. Iterative throughout: a 100,000-command chain is fine.
std::shared_ptr<const Plan> build_plan(std::shared_ptr<const Recording> recording);

/// How errors and traces name command `c` of `plan` in an executable whose top plan is
/// `root`: its own name at the top level, "buffer/name" inside executed buffers.
inline std::string command_label(const Plan& plan, std::uint32_t c, const Plan& root) {
  return &plan == &root ? plan.name(c) : plan.recording->qualified_name(c);
}

/// The first command of `kind` in `plan` or in a buffer it executes or loops over, named as
/// errors name it (see command_label); nullopt when there is none.
std::optional<std::string> find_command(const Plan& plan, CommandKind kind);

/// A scheduling weight per command kind: barriers and event commands cost nothing.
std::uint64_t schedule_weight(CommandKind kind) noexcept;

}  // namespace cmdgraph::detail
