// Profiles, Chrome traces and DOT pictures on the host backend: times ordered along edges,
// traces that parse with one slice per command per launch, DOT that Boost.Graph reads back.
#include "support/expect_error.hpp"

#include <cmdgraph/cmdgraph.hpp>

// Boost.PropertyTree's optional<double> trips GCC's -Wmaybe-uninitialized once inlined into
// sanitizer builds; the warning is about Boost's code, not ours.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <boost/property_tree/json_parser.hpp>
#include <boost/property_tree/ptree.hpp>
#if CMDGRAPH_TEST_READ_GRAPHVIZ
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/graphviz.hpp>
#endif

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <thread>
#include <type_traits>

using namespace cmdgraph;
using namespace std::chrono_literals;

namespace {

// a -> (b, c) -> d, plus e alone. b and c wait for each other (a second at most) and then
// sleep, so they overlap on two workers however the pool happens to schedule them.
CommandBuffer diamond() {
  CommandBuffer cmd("diamond \"quoted\"");
  auto arrived = std::make_shared<std::atomic<int>>(0);
  auto meet_then_sleep = [arrived] {
    const int pair_done = (arrived->fetch_add(1) / 2 + 1) * 2;  // both of this launch's pair
    const auto give_up = std::chrono::steady_clock::now() + 1s;
    while (arrived->load() < pair_done && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::yield();
    }
    std::this_thread::sleep_for(3ms);
  };
  auto a = cmd.host([] { std::this_thread::sleep_for(1ms); }).named("a");
  auto b = cmd.host(meet_then_sleep).named("b").after(a);
  auto c = cmd.host(meet_then_sleep).named("c").after(a);
  cmd.host([] {}).named("d").after(b, c).after(a);  // a -> d is redundant
  cmd.parallel_for(10000, [](std::size_t) {}).named("e");
  return cmd;
}

std::string read(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("cmdgraph_" + name)).string();
}

}  // namespace

TEST_CASE("observe.profile.host_times_follow_edges" * doctest::timeout(30)) {
  CommandBuffer cmd = diamond();
  Executable exe = compile(cmd, Device::host(), {.profile = true});
  Queue q(Device::host());
  CMDGRAPH_EXPECT_ERROR((void)exe.last_profile(), errc::wrong_state);  // not launched yet
  exe.launch(q).wait();
  const Profile p = exe.last_profile();
  REQUIRE(p.commands.size() == 5);
  CHECK(p.commands[0].name == "a");
  CHECK(p.commands[3].name == "d");
  CHECK(p.backend == "host");
  for (const CommandTiming& c : p.commands) {
    CHECK(c.start_ms >= 0);
    CHECK(c.end_ms >= c.start_ms);
  }
  for (const auto& [from, to] : p.edges) CHECK(p.commands[from].end_ms <= p.commands[to].start_ms);
  CHECK(p.commands[1].duration_ms() >= 2.9);
  CHECK(p.commands[1].lane != p.commands[2].lane);  // b and c ran on different workers
  CHECK(p.launch_ms >= p.commands[3].end_ms);
}

TEST_CASE("observe.profile.refused_without_profile_mode" * doctest::timeout(30)) {
  CommandBuffer cmd = diamond();
  Executable exe = compile(cmd, Device::host());
  Queue q(Device::host());
  exe.launch(q).wait();
  auto e = CMDGRAPH_EXPECT_ERROR((void)exe.last_profile(), errc::wrong_state);
  REQUIRE(e);
  CHECK(cmdgraph::testing::mentions(*e, ".profile = true"));
}

TEST_CASE("observe.trace.parses_one_slice_per_command_per_launch" * doctest::timeout(30)) {
  CommandBuffer cmd = diamond();
  Executable exe = compile(cmd, Device::host(), {.profile = true});
  Queue q(Device::host());
  std::vector<Profile> launches;
  for (int i = 0; i < 3; ++i) {
    exe.launch(q).wait();
    launches.push_back(exe.last_profile());
  }
  const std::string path = temp_path("trace.json");
  Profile::write_trace(path, launches);
  boost::property_tree::ptree tree;
  boost::property_tree::read_json(path, tree);
  std::size_t slices = 0, flow_starts = 0, flow_ends = 0, tracks = 0;
  std::vector<double> starts_of_d;
  for (const auto& [_, event] : tree.get_child("traceEvents")) {
    const std::string ph = event.get<std::string>("ph");
    if (ph == "X") {
      ++slices;
      CHECK(event.get<double>("dur") >= 0);
      if (event.get<std::string>("name") == "d") starts_of_d.push_back(event.get<double>("ts"));
    }
    flow_starts += ph == "s";
    flow_ends += ph == "f";
    tracks += ph == "M";
  }
  CHECK(slices == 3 * 5);
  CHECK(flow_starts == flow_ends);
  CHECK(flow_starts > 0);  // b and c ran on other workers than a or d
  CHECK(tracks >= 2);
  REQUIRE(starts_of_d.size() == 3);
  CHECK(starts_of_d[0] < starts_of_d[1]);  // launches laid end to end
  CHECK(starts_of_d[1] < starts_of_d[2]);
  CHECK(read(path).find("diamond \\\"quoted\\\"") != std::string::npos);  // escaped
  std::filesystem::remove(path);
}

TEST_CASE("observe.dot.reduced_edges_critical_path_and_times" * doctest::timeout(30)) {
  CommandBuffer cmd = diamond();
  Executable exe = compile(cmd, Device::host(), {.profile = true});
  Queue q(Device::host());
  exe.launch(q).wait();
  const std::string path = temp_path("graph.dot");
  exe.write_dot(path, {.removed_edges = true});
  const std::string dot = read(path);
  CHECK(dot.find("digraph") == 0);
  CHECK(dot.find("style=dashed") != std::string::npos);  // the removed a -> d
  CHECK(dot.find("color=red") != std::string::npos);     // the critical path
  CHECK(dot.find(" ms") != std::string::npos);           // measured durations
  CMDGRAPH_EXPECT_ERROR(exe.write_cuda_dot(path), errc::unsupported);
#if CMDGRAPH_TEST_READ_GRAPHVIZ
  // Boost.Graph reads it back: five commands, four kept edges plus the dashed one.
  using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS,
                                      boost::property<boost::vertex_name_t, std::string>>;
  Graph g;
  boost::dynamic_properties dp(boost::ignore_other_properties);
  dp.property("node_id", boost::get(boost::vertex_name, g));
  std::ifstream in(path);
  REQUIRE(boost::read_graphviz(in, g, dp));
  CHECK(boost::num_vertices(g) == 5);
  CHECK(boost::num_edges(g) == 5);
  exe.write_dot(path);
  Graph reduced;
  boost::dynamic_properties dp2(boost::ignore_other_properties);
  dp2.property("node_id", boost::get(boost::vertex_name, reduced));
  std::ifstream in2(path);
  REQUIRE(boost::read_graphviz(in2, reduced, dp2));
  CHECK(boost::num_edges(reduced) == exe.stats().edges_reduced);
#endif
  std::filesystem::remove(path);
}

TEST_CASE("observe.stats.stages_and_counts" * doctest::timeout(30)) {
  CommandBuffer cmd = diamond();
  Executable exe = compile(cmd, Device::host());
  const ExecutableStats& s = exe.stats();
  CHECK(s.commands == 5);
  CHECK(s.edges_recorded == 5);
  CHECK(s.edges_reduced == 4);
  CHECK(s.levels == 3);
  CHECK(s.plan_ms >= 0);
  CHECK(s.lower_ms >= 0);
  CHECK(s.backend == Backend::host);
}

// `profile = true` and `false` still mean what they meant; only a bool converts, not a number.
static_assert(std::is_convertible_v<bool, Profiling>);
static_assert(std::is_convertible_v<ProfileMode, Profiling>);
static_assert(!std::is_convertible_v<int, Profiling>);
static_assert(!std::is_convertible_v<const char*, Profiling>);
static_assert(CompileOptions{.profile = true}.profile.mode == ProfileMode::automatic);
static_assert(CompileOptions{.profile = false}.profile.mode == ProfileMode::off);
static_assert(!CompileOptions{}.profile);

TEST_CASE("observe.profile.modes_on_the_host_backend" * doctest::timeout(30)) {
  CommandBuffer cmd = diamond();
  for (ProfileMode asked : {ProfileMode::automatic, ProfileMode::events, ProfileMode::cupti,
                            ProfileMode::host_clock}) {
    CommandBuffer c = diamond();
    Executable exe = compile(c, Device::host(), {.profile = asked});
    CHECK(exe.stats().profile_mode == ProfileMode::host_clock);
    CHECK(!exe.stats().profile_reason.empty());
    Queue q(Device::host());
    exe.launch(q).wait();
    const Profile p = exe.last_profile();
    CHECK(p.timing == "host_clock");
    CHECK(p.launch == 0);
    CHECK(p.enqueue_start_ms == 0);  // the host backend does not tie launch() to the tasks
    CHECK(p.enqueue_end_ms == 0);
    CHECK(p.unmeasured == 0);
  }
  Executable off = compile(cmd, Device::host());
  CHECK(off.stats().profile_mode == ProfileMode::off);
  CHECK(std::string(to_string(ProfileMode::cupti)) == "cupti");
}

TEST_CASE("observe.profile.every_must_be_positive" * doctest::timeout(30)) {
  CommandBuffer cmd = diamond();
  auto e = CMDGRAPH_EXPECT_ERROR(
      compile(cmd, Device::host(), {.profile = true, .profile_every = 0}), errc::invalid_argument);
  REQUIRE(e);
  CHECK(cmdgraph::testing::mentions(*e, "profile_every"));
  CHECK(compile(cmd, Device::host(), {.profile = true, .profile_every = 1}));  // still open
}

// One launch in three is profiled, exactly: launches 0, 3, 6, 9. The host task sleeps only in
// the runs that count 0 modulo 3, so a profile of any other launch would show no sleep.
TEST_CASE("observe.profile.every_n_launches_exactly" * doctest::timeout(60)) {
  constexpr int every = 3, launches = 10;
  auto runs = std::make_shared<std::atomic<int>>(0);
  CommandBuffer cmd("sampled");
  cmd.host([runs] {
       if (runs->fetch_add(1) % every == 0) std::this_thread::sleep_for(5ms);
     }).named("work");
  Executable exe = compile(cmd, Device::host(), {.profile = true, .profile_every = every});
  Queue q(Device::host());
  std::vector<std::uint64_t> seen;
  for (int i = 0; i < launches; ++i) {
    exe.launch(q).wait();
    const Profile p = exe.last_profile();
    seen.push_back(p.launch);
    REQUIRE(p.commands.size() == 1);
    CHECK_MESSAGE(p.commands[0].duration_ms() >= 4.5, "launch " << p.launch << " took "
                                                                << p.commands[0].duration_ms());
  }
  const std::vector<std::uint64_t> expected{0, 0, 0, 3, 3, 3, 6, 6, 6, 9};
  CHECK(seen == expected);
  Executable copy = exe.clone();  // a clone counts its own launches from 0
  copy.launch(q).wait();
  CHECK(copy.last_profile().launch == 0);
}

// The host side of a launch, where a profile has it: launch() on its own track, the latency to
// the first command and the GPU's idle gaps on another; without it, none of these.
TEST_CASE("observe.trace.host_side_and_idle_gaps" * doctest::timeout(30)) {
  Profile p;
  p.executable = "gaps";
  p.backend = "cuda_graph";
  p.timing = "cupti";
  p.commands = {{"a", CommandKind::kernel, 0, 0.010, 0.020},
                {"b", CommandKind::kernel, 0, 0.030, 0.050},
                {"c", CommandKind::kernel, 1, 0.040, 0.060}};
  p.edges = {{0, 1}};
  p.launch_ms = 0.060;
  p.enqueue_start_ms = 0;
  p.enqueue_end_ms = 0.004;
  auto slices = [](const std::string& json) {
    std::stringstream text(json);
    boost::property_tree::ptree tree;
    boost::property_tree::read_json(text, tree);
    std::map<std::string, std::vector<std::pair<double, double>>> by_name;
    for (const auto& [_, event] : tree.get_child("traceEvents")) {
      if (event.get<std::string>("ph") != "X") continue;
      by_name[event.get<std::string>("name")].emplace_back(event.get<double>("ts"),
                                                           event.get<double>("dur"));
    }
    return by_name;
  };
  auto got = slices(p.trace_json());
  REQUIRE(got["launch()"].size() == 1);
  CHECK(got["launch()"][0].second == doctest::Approx(4.0));
  REQUIRE(got["launch latency"].size() == 1);
  CHECK(got["launch latency"][0].second == doctest::Approx(10.0));  // to a's start
  REQUIRE(got["GPU idle"].size() == 1);                             // a's end to b's start
  CHECK(got["GPU idle"][0].first == doctest::Approx(20.0));
  CHECK(got["GPU idle"][0].second == doctest::Approx(10.0));
  CHECK(got["a"].size() == 1);
  CHECK(p.trace_json().find("host: launch()") != std::string::npos);
  p.enqueue_end_ms = 0;  // host side unknown (event mode, the host backend)
  got = slices(p.trace_json());
  CHECK(got.count("launch()") == 0);
  CHECK(got.count("GPU idle") == 0);
  CHECK(got.size() == 3);
}

// A trace names each slice's launch as Profile::launch does: the executable's own count (with
// profile_every, 0, N, 2N, ...), not the profile's place in the list.
TEST_CASE("observe.trace.launch_numbers_are_the_profiles" * doctest::timeout(30)) {
  CommandBuffer cmd("sampled");
  cmd.host([] {}).named("work");
  Executable exe = compile(cmd, Device::host(), {.profile = true, .profile_every = 3});
  Queue q(Device::host());
  std::vector<Profile> profiled;
  for (int i = 0; i < 7; ++i) {
    exe.launch(q).wait();
    if (profiled.empty() || profiled.back().launch != exe.last_profile().launch) {
      profiled.push_back(exe.last_profile());
    }
  }
  REQUIRE(profiled.size() == 3);  // launches 0, 3 and 6
  std::stringstream text(Profile::trace_json(profiled));
  boost::property_tree::ptree tree;
  boost::property_tree::read_json(text, tree);
  std::vector<std::uint64_t> launches;
  for (const auto& [_, event] : tree.get_child("traceEvents")) {
    if (event.get<std::string>("ph") != "X") continue;
    launches.push_back(event.get<std::uint64_t>("args.launch"));
  }
  CHECK(launches == std::vector<std::uint64_t>{0, 3, 6});
}
