// Profile as Chrome trace JSON: complete ("X") slices on one track per lane, thread names for
// the tracks, and flow ("s"/"f") arrows for dependencies that cross lanes; where the host side
// is known, a track of launch() calls and one of the GPU's idle gaps and launch latency.
#include "observe/utf8.hpp"

#include <cmdgraph/error.hpp>
#include <cmdgraph/profile.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

namespace cmdgraph {
namespace {

// A JSON string's contents: UTF-8 (invalid bytes replaced), quotes, backslashes and control
// characters escaped (NUL as \u0000).
std::string escaped(const std::string& raw) {
  const std::string s = detail::valid_utf8(raw);
  std::string out;
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out;
}

// Trace times are microseconds.
std::string us(double ms) {
  std::ostringstream o;
  o.precision(3);
  o << std::fixed << ms * 1000.0;
  return o.str();
}

// Tracks beside the lanes: the host's launch() calls, and where the GPU ran none of the
// launch's commands.
constexpr unsigned host_track = 1'000'000;
constexpr unsigned idle_track = 1'000'001;

// Where no command of `p` ran between its first start and its last end.
std::vector<std::pair<double, double>> idle_gaps(const Profile& p) {
  std::vector<std::pair<double, double>> spans;
  for (const CommandTiming& c : p.commands) {
    if (c.end_ms > c.start_ms) spans.emplace_back(c.start_ms, c.end_ms);
  }
  std::sort(spans.begin(), spans.end());
  std::vector<std::pair<double, double>> gaps;
  double busy_until = spans.empty() ? 0 : spans.front().first;
  for (const auto& [start, end] : spans) {
    if (start > busy_until) gaps.emplace_back(busy_until, start);
    busy_until = std::max(busy_until, end);
  }
  return gaps;
}

// A slice of launch `p`'s, named by its launch number (Profile::launch) as its commands are.
void append_slice(std::ostringstream& out, const char* name, const char* category, unsigned tid,
                  double start_ms, double end_ms, const Profile& p) {
  out << R"({"name":")" << name << R"(","cat":")" << category << R"(","ph":"X","pid":1,"tid":)"
      << tid << R"(,"ts":)" << us(start_ms) << R"(,"dur":)" << us(end_ms - start_ms)
      << R"(,"args":{"launch":)" << p.launch << "}}";
}

// The host side (launch() enqueuing, the latency to the first command) and the GPU's idle gaps,
// where the profile ties the host's clock to the GPU's.
void append_host_side(std::ostringstream& out, const Profile& p, double offset_ms, const std::function<void()>& sep,
                      std::set<unsigned>& tracks) {
  if (p.enqueue_end_ms <= p.enqueue_start_ms) return;
  sep();
  append_slice(out, "launch()", "launch", host_track, offset_ms + p.enqueue_start_ms,
               offset_ms + p.enqueue_end_ms, p);
  tracks.insert(host_track);
  double first = p.launch_ms;
  for (const CommandTiming& c : p.commands) first = std::min(first, c.start_ms);
  if (first > p.enqueue_start_ms) {
    sep();
    append_slice(out, "launch latency", "idle", idle_track, offset_ms + p.enqueue_start_ms,
                 offset_ms + first, p);
  }
  for (const auto& [start, end] : idle_gaps(p)) {
    sep();
    append_slice(out, "GPU idle", "idle", idle_track, offset_ms + start, offset_ms + end, p);
  }
  tracks.insert(idle_track);
}

void append_launch(std::ostringstream& out, const Profile& p, std::size_t index, double offset_ms,
                   bool& first, std::set<unsigned>& lanes) {
  auto sep = [&] {
    if (!first) out << ",\n";
    first = false;
  };
  append_host_side(out, p, offset_ms, sep, lanes);
  for (const CommandTiming& c : p.commands) {
    lanes.insert(c.lane);
    sep();
    out << R"({"name":")" << escaped(c.name) << R"(","cat":")" << to_string(c.kind)
        << R"(","ph":"X","pid":1,"tid":)" << c.lane << R"(,"ts":)" << us(offset_ms + c.start_ms)
        << R"(,"dur":)" << us(c.duration_ms()) << R"(,"args":{"launch":)" << p.launch
        << R"(,"executable":")" << escaped(p.executable) << R"("}})";
  }
  std::size_t flow = index * 1'000'000;
  const std::set<std::pair<std::size_t, std::size_t>> programmatic(p.programmatic_edges.begin(),
                                                                   p.programmatic_edges.end());
  for (const auto& edge : p.edges) {
    const CommandTiming& a = p.commands[edge.first];
    const CommandTiming& b = p.commands[edge.second];
    // A programmatic edge is drawn even within a lane: its child may start before it ends.
    const bool early = programmatic.count(edge) > 0;
    if (a.lane == b.lane && !early) continue;
    const char* name = early ? "programmatic" : "dependency";
    ++flow;
    sep();
    out << R"({"name":")" << name << R"(","cat":"edge","ph":"s","id":)" << flow
        << R"(,"pid":1,"tid":)" << a.lane << R"(,"ts":)" << us(offset_ms + a.end_ms) << "}";
    sep();
    out << R"({"name":")" << name << R"(","cat":"edge","ph":"f","bp":"e","id":)" << flow
        << R"(,"pid":1,"tid":)" << b.lane << R"(,"ts":)" << us(offset_ms + b.start_ms) << "}";
  }
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  f.close();  // buffered bytes reach the file here: a full disk shows only now
  if (!f) throw Error(errc::invalid_argument, "could not write '" + path + "'");
}

}  // namespace

std::string Profile::trace_json(std::span<const Profile> launches) {
  std::ostringstream out;
  out << "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  bool first = true;
  std::set<unsigned> lanes;
  const auto origin = launches.empty() ? std::chrono::steady_clock::time_point{}
                                       : launches.front().started;
  for (std::size_t i = 0; i < launches.size(); ++i) {
    const double offset =
        std::chrono::duration<double, std::milli>(launches[i].started - origin).count();
    append_launch(out, launches[i], i, offset, first, lanes);
  }
  const std::string backend = launches.empty() ? "" : launches.front().backend;
  for (unsigned lane : lanes) {
    if (!first) out << ",\n";
    first = false;
    out << R"({"name":"thread_name","ph":"M","pid":1,"tid":)" << lane << R"(,"args":{"name":")";
    if (lane == host_track) {
      out << "host: launch()";
    } else if (lane == idle_track) {
      out << "GPU idle";
    } else {
      out << escaped(backend) << " lane " << lane;
    }
    out << R"("}})";
  }
  out << "\n]}\n";
  return out.str();
}

std::string Profile::trace_json() const { return trace_json(std::span<const Profile>(this, 1)); }

void Profile::write_trace(const std::string& path) const { write_file(path, trace_json()); }

void Profile::write_trace(const std::string& path, std::span<const Profile> launches) {
  write_file(path, trace_json(launches));
}

}  // namespace cmdgraph
