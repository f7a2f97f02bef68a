// Cost hints (cost(), CommandBuffer::costs_from): how long commands run, recorded for graph
// shaping and checked against the recording, a profile's commands against its own.
#include "record/recording.hpp"

#include <cmdgraph/command_buffer.hpp>
#include <cmdgraph/error.hpp>

#include <algorithm>
#include <cmath>
#include <set>

namespace cmdgraph::detail {
namespace {

std::string in_quotes(const std::string& s) { return "'" + s + "'"; }

// The names of every recording `rec` runs as a body, at any depth: a profile names their
// commands "buffer/name".
void add_body_names(const Recording& rec, std::set<std::string>& names) {
  for (const CommandRecord& r : rec.commands()) {
    for (const auto& body : bodies_of(r.payload)) {
      if (names.insert(body->name()).second) add_body_names(*body, names);
    }
  }
}

bool names_a_body_command(const std::string& label, const std::set<std::string>& bodies) {
  const auto slash = label.find('/');
  return slash != std::string::npos && bodies.count(label.substr(0, slash)) > 0;
}

// A duration in milliseconds as a cost: whole nanoseconds, never negative.
std::chrono::nanoseconds cost_of(double ms) {
  return std::chrono::nanoseconds(std::llround(std::max(ms, 0.0) * 1e6));
}

}  // namespace

void Recording::require_costs_open(const std::string& what) const {
  if (!body_.load(std::memory_order_acquire)) return;
  throw Error(errc::wrong_state,
              "command buffer " + in_quotes(name_) + " runs inside another (execute() or a "
              "conditional body), whose compile may read it on any thread: it cannot take " +
                  what + " any more");
}

void Recording::set_cost(std::uint32_t index, std::chrono::nanoseconds cost) {
  require_costs_open("a cost for command " + in_quotes(command_name(index)));
  if (cost.count() < 0) {
    throw Error(errc::invalid_argument,
                "command " + in_quotes(command_name(index)) + " was given a cost of " +
                    std::to_string(cost.count()) +
                    " ns; a cost is how long the command runs, at least 0",
                {command_name(index)});
  }
  own_commands()[index].hints.cost = cost;
}

void Recording::set_costs(const Profile& profile) {
  require_costs_open("costs from a profile");
  if (profile.executable != name_) {
    throw Error(errc::invalid_argument,
                "command buffer " + in_quotes(name_) + " cannot take costs from a profile of " +
                    in_quotes(profile.executable) +
                    ": costs_from takes a profile of the same commands");
  }
  std::set<std::string> bodies;
  add_body_names(*this, bodies);
  std::size_t own = 0;  // the profile's top-level commands: those not of a body
  for (const CommandTiming& t : profile.commands) own += !names_a_body_command(t.name, bodies);
  if (own != commands().size()) {
    throw Error(errc::invalid_argument,
                "command buffer " + in_quotes(name_) + " has " +
                    std::to_string(commands().size()) + " commands, the profile of " +
                    in_quotes(profile.executable) + " " + std::to_string(own) +
                    ": costs_from takes a profile of the same commands");
  }
  for (std::uint32_t c = 0; c < commands().size(); ++c) {
    const CommandKind kind = kind_of(commands()[c].payload);
    if (profile.commands[c].kind == kind) continue;
    throw Error(errc::invalid_argument,
                "command buffer " + in_quotes(name_) + ": command " +
                    in_quotes(command_name(c)) + " is a " + to_string(kind) +
                    ", command " + std::to_string(c) + " of the profile a " +
                    to_string(profile.commands[c].kind) +
                    ": costs_from takes a profile of the same commands",
                {command_name(c)});
  }
  std::vector<CommandRecord>& commands = own_commands();
  for (std::uint32_t c = 0; c < commands.size(); ++c) {
    commands[c].hints.cost = cost_of(profile.commands[c].duration_ms());
  }
}

void set_cost(CommandRef command, std::chrono::nanoseconds cost) {
  Recording& rec = resolve(command);
  const Recording::UseGuard guard(rec);
  rec.require_command(command);
  rec.set_cost(command.index, cost);
}

}  // namespace cmdgraph::detail

namespace cmdgraph {

void CommandBuffer::costs_from(const Profile& profile) {
  detail::Recording& rec = *detail::recording_of(*this);
  const detail::Recording::UseGuard guard(rec);
  rec.set_costs(profile);
}

}  // namespace cmdgraph
