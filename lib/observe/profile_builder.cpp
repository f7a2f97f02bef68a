// build_profile: order, edges, lanes.
#include "observe/profile_builder.hpp"

#include <algorithm>
#include <map>

namespace cmdgraph::detail {

Profile build_profile(const Plan& root, std::vector<MeasuredCommand> measured, std::string backend,
                      std::chrono::steady_clock::time_point started) {
  // Root commands by index, then nested ones in their plans' order.
  std::stable_sort(measured.begin(), measured.end(), [&](const auto& a, const auto& b) {
    const bool ra = a.plan == &root, rb = b.plan == &root;
    if (ra != rb) return ra;
    return ra && a.command < b.command;
  });
  Profile p;
  p.executable = root.buffer_name;
  p.backend = std::move(backend);
  p.started = started;
  std::map<std::pair<const Plan*, std::uint32_t>, std::size_t> index;
  for (const MeasuredCommand& m : measured) {
    index.emplace(std::make_pair(m.plan, m.command), p.commands.size());
    p.commands.push_back({command_label(*m.plan, m.command, root), m.plan->kind(m.command),
                          m.lane, m.start_ms, m.end_ms});
    p.launch_ms = std::max(p.launch_ms, m.end_ms);
  }
  for (const MeasuredCommand& m : measured) {
    for (std::uint32_t k : m.plan->dag->children[m.command]) {
      const auto to = index.find({m.plan, k});
      if (to == index.end()) continue;
      p.edges.emplace_back(index.at({m.plan, m.command}), to->second);
      if (m.plan->is_programmatic(m.command, k)) p.programmatic_edges.push_back(p.edges.back());
    }
  }
  // Lanes from times: each command takes the lowest lane free when it starts.
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < p.commands.size(); ++i) {
    if (p.commands[i].lane == MeasuredCommand::no_lane) order.push_back(i);
  }
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return p.commands[a].start_ms < p.commands[b].start_ms; });
  std::vector<double> busy_until;
  for (std::size_t i : order) {
    CommandTiming& c = p.commands[i];
    unsigned lane = 0;
    while (lane < busy_until.size() && busy_until[lane] > c.start_ms) ++lane;
    if (lane == busy_until.size()) busy_until.push_back(0);
    busy_until[lane] = c.end_ms;
    c.lane = lane;
  }
  return p;
}

}  // namespace cmdgraph::detail
