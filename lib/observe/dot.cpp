// plan_dot: one node per command, edges after reduction, decorations from lanes and timings.
#include "observe/dot.hpp"

#include "observe/utf8.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

namespace cmdgraph::detail {
namespace {

// A DOT string's contents: UTF-8 (invalid bytes replaced), quotes and backslashes escaped,
// newlines as DOT's line break, other control characters (NUL included) written visibly as
// \xNN, since a DOT file cannot hold them.
std::string escaped(const std::string& raw) {
  const std::string s = valid_utf8(raw);
  std::string out;
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (u < 0x20 || u == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\\\x%02x", u);
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

// Light fills, distinct per lane (Graphviz's "pastel19" scheme).
std::string fill_for(unsigned lane) { return "/pastel19/" + std::to_string(lane % 9 + 1); }

// The heaviest source-to-sink path by measured durations (the plan's own critical path uses
// scheduling weights, which know nothing of how long commands really took).
std::vector<std::uint32_t> measured_critical_path(const Plan& plan, const Profile& profile) {
  const std::size_t n = plan.size();
  std::vector<double> below(n, 0);
  std::vector<std::int64_t> next(n, -1);
  for (auto it = plan.dag->order.rbegin(); it != plan.dag->order.rend(); ++it) {
    for (std::uint32_t k : plan.dag->children[*it]) {
      if (next[*it] < 0 || below[k] > below[next[*it]]) next[*it] = k;
    }
    below[*it] = profile.commands[*it].duration_ms() + (next[*it] >= 0 ? below[next[*it]] : 0);
  }
  std::int64_t at = -1;
  for (std::uint32_t c : plan.dag->order) {
    if (plan.dag->parents[c].empty() && (at < 0 || below[c] > below[at])) at = c;
  }
  std::vector<std::uint32_t> path;
  for (; at >= 0; at = next[at]) path.push_back(static_cast<std::uint32_t>(at));
  return path;
}

// Command c's label: its name and kind, its bodies, its priority, its measured time.
std::string node_label(const Plan& plan, std::uint32_t c, const Profile* profile,
                       const DotOptions& options) {
  // Names are escaped; "\\n" is DOT's own line break.
  std::string label = escaped(plan.name(c)) + "\\n" + to_string(plan.kind(c));
  // Its bodies in its kind's order: a switch's cases, an if_else's then and else.
  const auto bodies = plan.bodies_of(c);
  for (std::size_t b = 0; b < bodies.size(); ++b) {
    label += (b == 0 ? " '" : ", '") + escaped(bodies[b]->buffer_name) + "' (" +
             std::to_string(bodies[b]->size()) + ")";
  }
  if (const auto& priority = plan.command(c).hints.priority) {
    static constexpr const char* levels[] = {"low", "normal", "high"};
    label += "\\npriority " + (priority->native ? std::to_string(priority->value)
                                                 : std::string(levels[priority->value]));
  }
  if (options.timings && profile && c < profile->commands.size()) {
    char ms[32];
    std::snprintf(ms, sizeof ms, "\\n%.3f ms", profile->commands[c].duration_ms());
    label += ms;
  }
  return label;
}

using EdgeSet = std::set<std::pair<std::uint32_t, std::uint32_t>>;

// The reduced edges: on the critical path in red, inferred ones (Hazards::infer) dashed and
// labelled with the memory they order, programmatic ones (the child may launch while the
// parent runs) with an open arrowhead.
void write_edges(const Plan& plan, const EdgeSet& critical_edges, std::ostream& out) {
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::string> inferred;
  for (const InferredEdge& e : plan.hazards.inferred) {
    inferred.emplace(std::pair(e.edge.parent, e.edge.child), memory_of(plan, e));
  }
  for (std::uint32_t c = 0; c < plan.size(); ++c) {
    for (std::uint32_t k : plan.dag->children[c]) {
      std::vector<std::string> attributes;
      if (critical_edges.count({c, k})) attributes.emplace_back("color=red, penwidth=2");
      if (const auto it = inferred.find({c, k}); it != inferred.end()) {
        attributes.push_back("style=dashed, label=\"" + escaped(it->second) + "\"");
      }
      if (plan.is_programmatic(c, k)) {
        attributes.emplace_back("arrowhead=onormal, xlabel=\"programmatic\"");
      }
      out << "  c" << c << " -> c" << k;
      for (std::size_t a = 0; a < attributes.size(); ++a) {
        out << (a == 0 ? " [" : ", ") << attributes[a];
      }
      out << (attributes.empty() ? ";\n" : "];\n");
    }
  }
}

// The recorded edges the reduction removed, faint and dashed.
void write_removed_edges(const Plan& plan, std::ostream& out) {
  EdgeSet kept;
  for (std::uint32_t c = 0; c < plan.size(); ++c) {
    for (std::uint32_t k : plan.dag->children[c]) kept.emplace(c, k);
  }
  EdgeSet drawn;
  for (const Edge& e : plan.dag->edges) {
    const auto edge = std::make_pair(e.parent, e.child);
    if (kept.count(edge) || !drawn.insert(edge).second) continue;
    out << "  c" << e.parent << " -> c" << e.child
        << " [style=dashed, color=\"#b0b0b0\", constraint=false];\n";
  }
}

}  // namespace

std::string plan_dot(const Plan& plan, const std::vector<unsigned>& lanes, const Profile* profile,
                     const DotOptions& options) {
  const bool measured = profile && profile->commands.size() >= plan.size();
  const std::vector<std::uint32_t> path =
      measured ? measured_critical_path(plan, *profile) : plan.dag->critical_path;
  const std::set<std::uint32_t> critical(path.begin(), path.end());
  EdgeSet critical_edges;
  for (std::size_t i = 1; i < path.size(); ++i) critical_edges.emplace(path[i - 1], path[i]);
  std::ostringstream out;
  out << "digraph \"" << escaped(plan.buffer_name) << "\" {\n"
      << "  rankdir=TB;\n  node [fontname=\"Helvetica\", fontsize=10, style=filled, "
         "fillcolor=\"#f0f0f0\"];\n  edge [color=\"#606060\"];\n";
  for (std::uint32_t c = 0; c < plan.size(); ++c) {
    out << "  c" << c << " [label=\"" << node_label(plan, c, profile, options)
        << "\", shape=" << traits(plan.kind(c)).dot_shape;
    if (c < lanes.size()) out << ", fillcolor=\"" << fill_for(lanes[c]) << "\"";
    if (critical.count(c)) out << ", color=red, penwidth=2";
    out << "];\n";
  }
  write_edges(plan, critical_edges, out);
  if (options.removed_edges) write_removed_edges(plan, out);
  out << "}\n";
  return out.str();
}

}  // namespace cmdgraph::detail
