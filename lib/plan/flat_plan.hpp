// FlatPlan: a plan with executed buffers expanded in place, for backends that schedule single
// commands (host, streams). Each execute command becomes an entry and an exit join task around
// the executed plan's own tasks; a conditional command (a loop, an if, a switch) stays one task.
#pragma once

#include "plan/adjacency.hpp"
#include "plan/plan.hpp"

#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

namespace cmdgraph::detail {

struct FlatTask {
  static constexpr std::uint32_t join = std::numeric_limits<std::uint32_t>::max();
  const Plan* plan;       // the plan the command belongs to (the root or a nested one)
  std::uint32_t command;  // its index there, or `join` for a no-op join task
  bool is_join() const noexcept { return command == join; }
};

/// An executed buffer's command once expanded: the join tasks before and after its contents.
struct NestedSpan {
  const Plan* plan;
  std::uint32_t command;
  std::uint32_t entry, exit;
};

struct FlatPlan {
  std::vector<FlatTask> tasks;              // in a topological order
  std::vector<NestedSpan> nested;           // every execute command, at any depth
  Adjacency children;
  Adjacency parents;
  std::vector<std::uint32_t> sources;       // tasks without parents
  std::vector<std::uint32_t> root_task;     // root command index -> its (exit) task
  std::vector<std::uint32_t> root_entry;    // root command index -> its entry task
};

FlatPlan flatten(const Plan& root);

/// How errors, traces and NVTX name each task of a flat plan of an executable whose top plan
/// is `root`: command_label, or "join". Packed in one buffer, each label NUL-terminated, so
/// labelling a frame's tasks allocates no string per task.
class TaskLabels {
 public:
  TaskLabels() = default;
  /// The labels of `tasks` (of a FlatPlan, or of a conditional body's).
  TaskLabels(std::span<const FlatTask> tasks, const Plan& root);
  const char* operator[](std::size_t task) const noexcept { return text_.data() + at_[task]; }

 private:
  std::string text_;
  std::vector<std::uint32_t> at_;  // per task: where its label starts in text_
};

}  // namespace cmdgraph::detail
