// CUPTI mode: mapping nodes of the instantiated graph to commands, waiting for a launch's
// records, and placing each command: from its records, from the host clock (host tasks), from
// the commands it contains (executed buffers), or at its parents' end (no work of its own).
#include "backend/cuda_launch/cupti_timing.hpp"

#include "observe/profile_builder.hpp"

#include <cmdgraph/error.hpp>

#include <algorithm>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>
#include <unordered_set>

namespace cmdgraph::detail {
namespace {

std::mutex report_mutex;
std::string report;

struct Span {
  double start, end;  // ms from the launch's start
};

std::int64_t steady_ns(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

void widen(std::optional<Span>& span, Span s) {
  if (!span) {
    span = s;
  } else {
    span->start = std::min(span->start, s.start);
    span->end = std::max(span->end, s.end);
  }
}

// Commands grouped by the run they belong to: [0] the root's, [o + 1] those inside owner o.
std::vector<std::vector<std::uint32_t>> runs_of(const std::vector<TimedCommand>& commands) {
  std::vector<std::vector<std::uint32_t>> runs(commands.size() + 1);
  for (std::uint32_t i = 0; i < commands.size(); ++i) {
    const std::uint32_t owner = commands[i].owner;
    runs[owner == no_timed ? 0 : owner + 1].push_back(i);
  }
  return runs;
}

// Places every command of one run (in order: parents first). `entry`: where commands with no
// parent and no time of their own go (the owner's entry, or the launch's first work).
void place(const std::vector<TimedCommand>& commands,
           const std::vector<std::vector<std::uint32_t>>& runs, std::uint32_t run, double entry,
           std::vector<std::optional<Span>>& spans) {
  for (std::uint32_t i : runs[run]) {
    if (spans[i]) continue;  // its own records or host times
    double at = commands[i].parents.empty() ? entry : 0.0;
    for (std::uint32_t p : commands[i].parents) {
      if (p != no_timed && spans[p]) at = std::max(at, spans[p]->end);
    }
    if (!runs[i + 1].empty()) {  // an executed buffer: the span of what it ran
      place(commands, runs, i + 1, at, spans);
      for (std::uint32_t k : runs[i + 1]) widen(spans[i], *spans[k]);
    }
    if (!spans[i]) spans[i] = Span{at, at};
  }
}

std::string name_of(const Plan& root, const TimedCommand& c) {
  return command_label(*c.plan, c.command, root);
}

}  // namespace

NodeMap::NodeMap(const std::vector<TimedNode>& nodes, const std::vector<std::uint64_t>& ids,
                 const std::vector<std::pair<std::uint64_t, std::uint64_t>>& clones) {
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    timed_of_[ids[i]] = nodes[i].timed;
    built_.push_back(ids[i]);
  }
  // In CUPTI's order: a clone of a clone follows its original's entry.
  for (const auto& [original, clone] : clones) {
    ++clones_;
    const auto it = timed_of_.find(original);
    if (it == timed_of_.end()) continue;
    const std::uint32_t timed = it->second;
    timed_of_[clone] = timed;
    built_.push_back(clone);
    ++clones_followed_;
  }
}

std::uint32_t NodeMap::timed_of(std::uint64_t id) const {
  const auto it = timed_of_.find(id);
  return it == timed_of_.end() ? no_timed : it->second;
}

std::string NodeMap::describe() const {
  return std::to_string(built_.size() - clones_followed_) + " nodes built, " +
         std::to_string(clones_) + " clones reported while instantiating, " +
         std::to_string(clones_followed_) + " of them of our nodes";
}

std::vector<std::uint64_t> node_ids(const CuptiTiming& timing, cuda::Served served) {
  std::vector<std::uint64_t> ids;
  ids.reserve(timing.nodes.size());
  for (const TimedNode& n : timing.nodes) ids.push_back(cuda::cupti::node_id(n.node, served));
  return ids;
}

void map_nodes(CuptiTiming& timing, const std::vector<std::uint64_t>& ids,
               const std::vector<std::pair<std::uint64_t, std::uint64_t>>& clones) {
  timing.map = std::make_shared<const NodeMap>(timing.nodes, ids, clones);
  timing.nodes.clear();
  timing.nodes.shrink_to_fit();
}

namespace {

// How far before the launch's enqueue, placed on CUPTI's clock, a record of it may seem to
// start (the two clocks are read a few microseconds apart).
constexpr std::int64_t margin_ns = 50'000;

// Adds to `records` (those routed to the launch) the unclaimed records of nodes of `timing`
// that have none there and started after `origin`: records CUPTI filed under no launch of
// ours. Returns how many it added.
std::size_t adopt_unclaimed(std::vector<cuda::cupti::Record>& records,
                            const CuptiTiming& timing, cuda::cupti::Session& session,
                            std::int64_t origin) {
  std::unordered_set<std::uint64_t> routed;
  for (const auto& r : records) routed.insert(r.node);
  std::size_t added = 0;
  for (const auto& r : session.unclaimed(static_cast<std::uint64_t>(
           std::max<std::int64_t>(0, origin - margin_ns)))) {
    if (routed.contains(r.node) || timing.map->timed_of(r.node) == no_timed) continue;
    records.push_back(r);
    ++added;
  }
  return added;
}

// The records of `launch` (`origin`: its enqueue on CUPTI's clock). CUPTI hands a buffer over
// once every record in it is complete: another launch still running can hold ours back a
// while; forced, it gives up on those. When those routed to the launch leave a command
// without one, unclaimed records of its nodes are taken (`adopted` counts them).
std::vector<cuda::cupti::Record> await_records(const CuptiLaunch& launch,
                                               cuda::cupti::Session& session,
                                               std::int64_t origin, bool& forced,
                                               std::size_t& adopted) {
  const CuptiTiming& timing = *launch.timing;
  auto complete = [&](const std::vector<cuda::cupti::Record>& records) {
    std::vector<char> seen(timing.commands.size(), 0);
    for (const auto& r : records) {
      if (const std::uint32_t t = timing.map->timed_of(r.node); t != no_timed) seen[t] = 1;
    }
    for (std::size_t i = 0; i < seen.size(); ++i) {
      if (timing.commands[i].expects_record && !seen[i]) return false;
    }
    return true;
  };
  auto gather = [&] {
    std::vector<cuda::cupti::Record> records = launch.records->records();
    adopted = complete(records) ? 0 : adopt_unclaimed(records, timing, session, origin);
    return records;
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  for (;;) {
    session.flush(false);
    std::vector<cuda::cupti::Record> records = gather();
    if (complete(records)) return records;
    if (std::chrono::steady_clock::now() > deadline) {
      session.flush(true);
      forced = true;
      return gather();
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

// One record per node: the earliest that started after the launch was enqueued (less a
// margin for placing the host clock on CUPTI's), or the earliest of all when none did. Every
// node we time runs once per launch (conditional bodies are timed by top-level nodes around
// them), and the launches of one graph run one after another, so a later launch's records
// start after all of this one's. Those can be filed here: CUPTI before 13.1 Update 1 gave
// "incorrect correlation IDs for cudaGraphLaunch API calls and their associated kernel
// launches" in sessions after the first (its release notes), and a re-read of a sampled
// launch on the H200 saw its kernel's span change (run 49).
std::vector<cuda::cupti::Record> first_per_node(std::vector<cuda::cupti::Record> records,
                                                std::int64_t origin) {
  std::sort(records.begin(), records.end(), [](const auto& a, const auto& b) {
    return a.node != b.node ? a.node < b.node : a.start < b.start;
  });
  std::vector<cuda::cupti::Record> first;
  for (std::size_t i = 0; i < records.size();) {
    std::size_t end = i;
    while (end < records.size() && records[end].node == records[i].node) ++end;
    std::size_t pick = i;
    while (pick < end && static_cast<std::int64_t>(records[pick].start) < origin - margin_ns) {
      ++pick;
    }
    first.push_back(records[pick < end ? pick : i]);
    i = end;
  }
  return first;
}

// Each command's own span (ms from the launch's start): its records, or a host task's times.
// Records of nodes that are none of ours go to `unmatched`.
std::vector<std::optional<Span>> own_spans(const CuptiLaunch& launch,
                                           const std::vector<cuda::cupti::Record>& records,
                                           std::int64_t steady_to_cupti,
                                           std::vector<std::uint64_t>& unmatched) {
  const CuptiTiming& timing = *launch.timing;
  const std::int64_t origin = steady_ns(launch.started) + steady_to_cupti;
  auto ms = [&](std::int64_t cupti_ns) { return static_cast<double>(cupti_ns - origin) / 1e6; };
  std::vector<std::optional<Span>> spans(timing.commands.size());
  for (const auto& r : first_per_node(records, origin)) {
    const std::uint32_t t = timing.map->timed_of(r.node);
    if (t == no_timed) {
      unmatched.push_back(r.node);
      continue;
    }
    widen(spans[t], Span{ms(static_cast<std::int64_t>(r.start)),
                         ms(static_cast<std::int64_t>(r.end))});
  }
  for (std::size_t i = 0; i < spans.size(); ++i) {
    const HostTimes* host = timing.commands[i].host;
    if (host && host->timed_in.load(std::memory_order_acquire) == launch.host_launch) {
      spans[i] = Span{ms(host->started_ns.load(std::memory_order_relaxed) + steady_to_cupti),
                      ms(host->ended_ns.load(std::memory_order_relaxed) + steady_to_cupti)};
    }
  }
  return spans;
}

// What the read saw, for last_cupti_report().
void keep_report(const std::string& launch_name, const CuptiLaunch& launch,
                 const std::vector<cuda::cupti::Record>& records, std::size_t adopted,
                 bool forced,
                 const std::vector<std::uint64_t>& unmatched,
                 const std::vector<std::string>& without, cuda::cupti::Session::Lost lost) {
  const NodeMap& map = *launch.timing->map;
  std::ostringstream out;
  out << launch_name << ": CUPTI correlation " << launch.records->correlation() << ", "
      << records.size() << " records (" << adopted << " of them unclaimed ones of our nodes, "
      << unmatched.size() << " nodes not ours)"
      << (forced ? ", forced flush" : "") << "; " << map.describe() << "; " << lost.unclaimed
      << " records of no traced launch and " << lost.dropped << " dropped so far";
  if (!unmatched.empty()) {
    out << "; node ids of records not ours:";
    for (std::size_t i = 0; i < unmatched.size() && i < 16; ++i) out << ' ' << unmatched[i];
    out << "; ids we know:";
    const auto& ids = map.built_ids();
    for (std::size_t i = 0; i < ids.size() && i < 32; ++i) out << ' ' << ids[i];
  }
  if (!without.empty()) {
    out << "; commands without a record:";
    for (std::size_t i = 0; i < without.size() && i < 16; ++i) out << " '" << without[i] << "'";
  }
  std::lock_guard lock(report_mutex);
  report = out.str();
}

}  // namespace

Profile read_cupti_profile(const Plan& root, const CuptiLaunch& launch,
                           cuda::cupti::Session& session, const std::string& backend) {
  const std::string launch_name =
      "launch " + std::to_string(launch.index) + " of executable '" + root.buffer_name + "'";
  if (const std::string error = launch.records->error(); !error.empty()) {
    throw cuda::cupti::Refused(errc::cuda_error,
                               "CUPTI did not trace " + launch_name + ": " + error);
  }
  if (launch.profile) return *launch.profile;
  bool forced = false;
  std::size_t adopted = 0;
  const std::int64_t steady_to_cupti = session.steady_to_cupti();
  const std::vector<cuda::cupti::Record> records = await_records(
      launch, session, steady_ns(launch.started) + steady_to_cupti, forced, adopted);
  std::vector<std::uint64_t> unmatched;
  std::vector<std::optional<Span>> spans = own_spans(launch, records, steady_to_cupti, unmatched);

  const std::vector<TimedCommand>& commands = launch.timing->commands;
  std::vector<std::string> without;  // commands that expected a record and got none
  std::optional<double> first;
  for (std::size_t i = 0; i < commands.size(); ++i) {
    if (commands[i].expects_record && !spans[i]) without.push_back(name_of(root, commands[i]));
    if (spans[i] && (!first || spans[i]->start < *first)) first = spans[i]->start;
  }
  place(commands, runs_of(commands), 0, first.value_or(0.0), spans);

  std::vector<MeasuredCommand> measured;
  measured.reserve(commands.size());
  for (std::size_t i = 0; i < commands.size(); ++i) {
    measured.push_back({commands[i].plan, commands[i].command, MeasuredCommand::no_lane,
                        spans[i]->start, spans[i]->end});
  }
  Profile p = build_profile(root, std::move(measured), backend, launch.started);
  p.launch = launch.index;
  p.timing = "cupti";
  p.enqueue_start_ms = 0;
  p.enqueue_end_ms =
      std::chrono::duration<double, std::milli>(launch.enqueued - launch.started).count();
  p.unmeasured = without.size();
  keep_report(launch_name, launch, records, adopted, forced, unmatched, without,
              session.lost());
  launch.profile = p;
  return p;
}

std::string last_cupti_report() {
  std::lock_guard lock(report_mutex);
  return report;
}

}  // namespace cmdgraph::detail
