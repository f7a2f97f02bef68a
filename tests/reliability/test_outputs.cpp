// What cmdgraph writes for people (issue 20, low items): a write that fails when the file is
// closed is reported, and names with NUL bytes or invalid UTF-8 leave DOT and trace JSON well
// formed; and events' documented answers to elapsed() backwards and wait() before any record.
#include "support/expect_error.hpp"

#include <cmdgraph/cmdgraph.hpp>

// Boost.PropertyTree's optional<double> trips GCC's -Wmaybe-uninitialized once inlined into
// sanitizer builds; the warning is about Boost's code, not ours.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <boost/property_tree/json_parser.hpp>
#include <boost/property_tree/ptree.hpp>

#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace cmdgraph;
using cmdgraph::testing::mentions;
using namespace std::chrono_literals;

namespace {

std::string read(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// True when `s` is well-formed UTF-8 (no overlong forms, surrogates or values past U+10FFFF).
bool valid_utf8(const std::string& s) {
  for (std::size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    std::size_t n = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    std::uint32_t cp = n == 1 ? b : b & (0x7f >> n);
    for (std::size_t k = 1; k < n; ++k) {
      const auto c = static_cast<unsigned char>(s[i + k]);
      if ((c >> 6) != 2) return false;
      cp = cp << 6 | (c & 0x3f);
    }
    const std::uint32_t least[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < least[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    i += n;
  }
  return true;
}

const std::string with_nul("a\0b", 3);
const std::string bad_utf8 = "bad \xff\xfe then \xc3";
const std::string good_utf8 = "caf\xc3\xa9";

Executable named_badly(Queue& q) {
  CommandBuffer cmd(std::string("buf\0fer \xff", 9));
  cmd.host([] {}).named(with_nul);
  cmd.host([] {}).named(bad_utf8);
  cmd.host([] {}).named(good_utf8);
  Executable exe = compile(cmd, Device::host(), {.profile = true});
  exe.launch(q).wait();
  return exe;
}

}  // namespace

TEST_CASE("reliability.write_failing_at_close_is_reported" * doctest::timeout(60)) {
  if (!std::filesystem::exists("/dev/full")) {
    MESSAGE("no /dev/full here");
    return;
  }
  Queue q(Device::host());
  CommandBuffer cmd("small");
  cmd.host([] {});
  Executable exe = compile(cmd, Device::host(), {.profile = true});
  exe.launch(q).wait();
  const auto dot = CMDGRAPH_EXPECT_ERROR(exe.write_dot("/dev/full"), errc::invalid_argument);
  REQUIRE(dot);
  CHECK(mentions(*dot, "/dev/full"));
  const auto trace = CMDGRAPH_EXPECT_ERROR(exe.last_profile().write_trace("/dev/full"),
                                           errc::invalid_argument);
  REQUIRE(trace);
  CHECK(mentions(*trace, "/dev/full"));
  const Profile p = exe.last_profile();
  CMDGRAPH_EXPECT_ERROR(Profile::write_trace("/dev/full", std::span<const Profile>(&p, 1)),
                        errc::invalid_argument);
}

TEST_CASE("reliability.dot_escapes_nul_and_invalid_utf8" * doctest::timeout(60)) {
  Queue q(Device::host());
  Executable exe = named_badly(q);
  const std::string path =
      (std::filesystem::temp_directory_path() / "cmdgraph_reliability_names.dot").string();
  exe.write_dot(path);
  const std::string dot = read(path);
  std::filesystem::remove(path);
  CHECK(dot.find('\0') == std::string::npos);
  CHECK(valid_utf8(dot));
  CHECK(dot.find(good_utf8) != std::string::npos);  // valid UTF-8 is kept as it is
  CHECK(dot.find("a\\\\x00b") != std::string::npos);  // the NUL, visible
  CHECK(dot.find("bad \xef\xbf\xbd\xef\xbf\xbd then \xef\xbf\xbd") != std::string::npos);
}

TEST_CASE("reliability.trace_json_escapes_nul_and_invalid_utf8" * doctest::timeout(60)) {
  Queue q(Device::host());
  Executable exe = named_badly(q);
  const std::string json = exe.last_profile().trace_json();
  CHECK(valid_utf8(json));
  boost::property_tree::ptree tree;
  std::istringstream in(json);
  REQUIRE_NOTHROW(boost::property_tree::read_json(in, tree));
  std::vector<std::string> names;
  for (const auto& [key, event] : tree.get_child("traceEvents")) {
    if (event.get<std::string>("ph") == "X") names.push_back(event.get<std::string>("name"));
  }
  REQUIRE(names.size() == 3);
  CHECK(names[0] == with_nul);  // escaped as \u0000, read back as it was
  CHECK(names[1] == "bad \xef\xbf\xbd\xef\xbf\xbd then \xef\xbf\xbd");  // U+FFFD each
  CHECK(names[2] == good_utf8);
}

TEST_CASE("reliability.event_elapsed_backwards_refused" * doctest::timeout(60)) {
  Event start(Device::host(), {.timing = true}), stop(Device::host(), {.timing = true});
  CommandBuffer cmd("sleeps");
  cmd.host([] { std::this_thread::sleep_for(2ms); });
  Executable exe = compile(cmd, Device::host());
  Queue q(Device::host());
  q.record(start);
  exe.launch(q);
  q.record(stop);
  q.wait();
  CHECK(Event::elapsed(start, stop).count() > 0);
  const auto e = CMDGRAPH_EXPECT_ERROR(Event::elapsed(stop, start), errc::invalid_argument);
  REQUIRE(e);
  CHECK(mentions(*e, "before"));
  CHECK(Event::elapsed(start, start).count() == 0);
}

TEST_CASE("reliability.event_wait_before_any_record_refused" * doctest::timeout(60)) {
  Event event(Device::host());
  CHECK_FALSE(event.ready());
  const auto e = CMDGRAPH_EXPECT_ERROR(event.wait(), errc::wrong_state);
  REQUIRE(e);
  CHECK(mentions(*e, "never recorded"));
  Queue q(Device::host());
  q.record(event);
  event.wait();
  CHECK(event.ready());
}
