// Profile as Chrome trace JSON: complete ("X") slices on one track per lane, thread names for
// the tracks, and flow ("s"/"f") arrows for dependencies that cross lanes.
#include "observe/utf8.hpp"

#include <cmdgraph/error.hpp>
#include <cmdgraph/profile.hpp>

#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

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

void append_launch(std::ostringstream& out, const Profile& p, std::size_t index, double offset_ms,
                   bool& first, std::set<unsigned>& lanes) {
  auto sep = [&] {
    if (!first) out << ",\n";
    first = false;
  };
  for (const CommandTiming& c : p.commands) {
    lanes.insert(c.lane);
    sep();
    out << R"({"name":")" << escaped(c.name) << R"(","cat":")" << to_string(c.kind)
        << R"(","ph":"X","pid":1,"tid":)" << c.lane << R"(,"ts":)" << us(offset_ms + c.start_ms)
        << R"(,"dur":)" << us(c.duration_ms()) << R"(,"args":{"launch":)" << index
        << R"(,"executable":")" << escaped(p.executable) << R"("}})";
  }
  std::size_t flow = index * 1'000'000;
  for (const auto& [from, to] : p.edges) {
    const CommandTiming& a = p.commands[from];
    const CommandTiming& b = p.commands[to];
    if (a.lane == b.lane) continue;
    ++flow;
    sep();
    out << R"({"name":"dependency","cat":"edge","ph":"s","id":)" << flow << R"(,"pid":1,"tid":)"
        << a.lane << R"(,"ts":)" << us(offset_ms + a.end_ms) << "}";
    sep();
    out << R"({"name":"dependency","cat":"edge","ph":"f","bp":"e","id":)" << flow
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
    out << R"({"name":"thread_name","ph":"M","pid":1,"tid":)" << lane
        << R"(,"args":{"name":")" << escaped(backend) << " lane " << lane << R"("}})";
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
