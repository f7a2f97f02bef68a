// flatten: expands executed buffers between join tasks, keeping a topological task order.
#include "plan/flat_plan.hpp"

#include <algorithm>
#include <string_view>
#include <utility>

namespace cmdgraph::detail {
namespace {

using Pairs = std::vector<std::pair<std::uint32_t, std::uint32_t>>;

struct Span {
  std::uint32_t entry;  // the task edges into the command go to
  std::uint32_t exit;   // the task edges out of the command leave from
};

class Flattener {
 public:
  std::vector<FlatTask> tasks;
  Pairs edges;
  std::vector<NestedSpan> executed;

  // Appends the tasks of `plan`; every source hangs off `entry` when given. Returns the
  // span of each command of `plan`.
  std::vector<Span> expand(const Plan& plan, std::int64_t entry) {
    std::vector<Span> spans(plan.size());
    for (std::uint32_t c : plan.dag->order) {
      // A conditional command stays one task: which body runs, how often, is only known as it
      // runs.
      const Plan* nested =
          traits(plan.kind(c)).expands ? plan.bodies_of(c).front().get() : nullptr;
      if (nested) {
        const std::uint32_t in = add(plan, FlatTask::join);
        const std::vector<Span> inner = expand(*nested, in);
        const std::uint32_t out = add(plan, FlatTask::join);
        for (std::uint32_t s = 0; s < nested->size(); ++s) {
          if (nested->dag->children[s].empty()) edges.emplace_back(inner[s].exit, out);
        }
        if (nested->size() == 0) edges.emplace_back(in, out);
        spans[c] = {in, out};
        executed.push_back({&plan, c, in, out});
      } else {
        const std::uint32_t t = add(plan, c);
        spans[c] = {t, t};
      }
      if (entry >= 0 && plan.dag->parents[c].empty()) {
        edges.emplace_back(static_cast<std::uint32_t>(entry), spans[c].entry);
      }
      for (std::uint32_t p : plan.dag->parents[c]) {
        edges.emplace_back(spans[p].exit, spans[c].entry);
      }
    }
    return spans;
  }

 private:
  std::uint32_t add(const Plan& plan, std::uint32_t command) {
    tasks.push_back({&plan, command});
    return static_cast<std::uint32_t>(tasks.size() - 1);
  }
};

}  // namespace

FlatPlan flatten(const Plan& root) {
  Flattener f;
  const std::vector<Span> spans = f.expand(root, -1);
  FlatPlan flat;
  const std::size_t n = f.tasks.size();
  Pairs reversed;
  reversed.reserve(f.edges.size());
  for (const auto& [a, b] : f.edges) reversed.emplace_back(b, a);
  flat.children = Adjacency::from_pairs(n, f.edges);
  flat.parents = Adjacency::from_pairs(n, reversed);
  for (std::uint32_t t = 0; t < n; ++t) {
    if (flat.parents[t].empty()) flat.sources.push_back(t);
  }
  flat.root_task.reserve(spans.size());
  flat.root_entry.reserve(spans.size());
  for (const Span& s : spans) {
    flat.root_task.push_back(s.exit);
    flat.root_entry.push_back(s.entry);
  }
  flat.tasks = std::move(f.tasks);
  flat.nested = std::move(f.executed);
  return flat;
}

TaskLabels::TaskLabels(std::span<const FlatTask> tasks, const Plan& root) {
  // Sized first, then written in place: no string is made per label.
  static constexpr std::string_view join = "join";
  at_.reserve(tasks.size());
  std::size_t size = 0;
  for (const FlatTask& t : tasks) {
    at_.push_back(static_cast<std::uint32_t>(size));
    if (t.is_join()) {
      size += join.size() + 1;
    } else {
      if (t.plan != &root) size += t.plan->buffer_name.size() + 1;
      size += command_name_size(t.plan->command(t.command), t.command) + 1;
    }
  }
  text_.resize(size);
  char* out = text_.data();
  for (const FlatTask& t : tasks) {
    if (t.is_join()) {
      out = std::copy(join.begin(), join.end(), out);
    } else {
      if (t.plan != &root) {
        out = std::copy(t.plan->buffer_name.begin(), t.plan->buffer_name.end(), out);
        *out++ = '/';
      }
      out = write_command_name(out, t.plan->command(t.command), t.command);
    }
    *out++ = '\0';
  }
}

}  // namespace cmdgraph::detail
