// Profiles on both CUDA backends: times non-negative, ordered along edges, and consistent with
// the launch measured from the host; traces parse; CUDA's own DOT is written.
#include "cuda/kernels.cuh"
#include "support/expect_error.hpp"

// Boost.PropertyTree's optional<double> trips GCC's -Wmaybe-uninitialized; Boost's, not ours.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <boost/property_tree/json_parser.hpp>
#include <boost/property_tree/ptree.hpp>

#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

using namespace cmdgraph;
using namespace cmdgraph::testing;

namespace {

// A chain of 6 kernels of ~20 us with a fan of 3 beside its middle.
CommandBuffer shape() {
  CommandBuffer cmd("profiled");
  Command prev;
  std::vector<Command> chain;
  for (int i = 0; i < 6; ++i) {
    auto k = cmd.launch(&busy, LaunchConfig{{1}, {32}}, 40'000ll).named("chain" + std::to_string(i));
    if (i) k.after(prev);
    prev = k;
    chain.push_back(k);
  }
  for (int i = 0; i < 3; ++i) {
    cmd.launch(&busy, LaunchConfig{{1}, {32}}, 40'000ll).named("fan" + std::to_string(i)).after(chain[1]);
  }
  return cmd;
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("cmdgraph_gpu_" + name)).string();
}

}  // namespace

TEST_CASE("cuda.observe.profile_consistent_with_the_launch" * doctest::timeout(60)) {
  const Device gpu = Device::cuda(0);
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    CommandBuffer cmd = shape();
    Executable exe = compile(cmd, gpu, {.backend = backend, .profile = true});
    Queue q(gpu);
    CMDGRAPH_EXPECT_ERROR((void)exe.last_profile(), errc::wrong_state);
    exe.launch(q).wait();  // warm up
    const auto t0 = std::chrono::steady_clock::now();
    exe.launch(q).wait();
    const double wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    const Profile p = exe.last_profile();
    REQUIRE(p.commands.size() == 9);
    CHECK(p.backend == to_string(backend));
    double chain_sum = 0;
    for (std::size_t i = 0; i < p.commands.size(); ++i) {
      const CommandTiming& c = p.commands[i];
      CHECK(c.start_ms >= 0);
      CHECK(c.duration_ms() > 0.005);  // each kernel spins ~20 us
      if (i < 6) chain_sum += c.duration_ms();
    }
    constexpr double resolution_ms = 0.002;  // event timestamps are ~0.5 us apart at best
    for (const auto& [from, to] : p.edges) {
      CHECK(p.commands[from].end_ms <= p.commands[to].start_ms + resolution_ms);
    }
    CHECK(chain_sum <= p.launch_ms + resolution_ms);  // the chain ran one after another
    CHECK(p.launch_ms <= wall_ms + 0.05);             // and within what the host saw
    CHECK(p.launch_ms >= chain_sum * 0.9);
    MESSAGE(std::string(to_string(backend)) << ": launch " << p.launch_ms << " ms (host saw " << wall_ms
                         << " ms), chain kernels " << chain_sum << " ms");
    // Fan kernels overlap each other: at least two lanes.
    std::set<unsigned> lanes;
    for (const CommandTiming& c : p.commands) lanes.insert(c.lane);
    CHECK(lanes.size() >= 2);
  }
}

TEST_CASE("cuda.observe.trace_and_dot_files" * doctest::timeout(60)) {
  const Device gpu = Device::cuda(0);
  CommandBuffer cmd = shape();
  Executable exe = compile(cmd, gpu, {.backend = Backend::cuda_graph, .profile = true});
  Queue q(gpu);
  std::vector<Profile> launches;
  for (int i = 0; i < 2; ++i) {
    exe.launch(q).wait();
    launches.push_back(exe.last_profile());
  }
  const std::string trace = temp_path("trace.json");
  Profile::write_trace(trace, launches);
  boost::property_tree::ptree tree;
  boost::property_tree::read_json(trace, tree);
  std::size_t slices = 0;  // of commands: CUPTI profiles add the host side and idle gaps
  for (const auto& [_, event] : tree.get_child("traceEvents")) {
    const std::string cat = event.get<std::string>("cat", "");
    slices += event.get<std::string>("ph") == "X" && cat != "launch" && cat != "idle";
  }
  CHECK(slices == 2 * 9);
  const std::string cuda_dot = temp_path("cuda.dot");
  exe.write_cuda_dot(cuda_dot);
  std::ifstream f(cuda_dot);
  std::stringstream text;
  text << f.rdbuf();
  CHECK(text.str().find("digraph") != std::string::npos);
  const std::string ours = temp_path("ours.dot");
  exe.write_dot(ours);
  CHECK(std::filesystem::file_size(ours) > 100);
  for (const auto& p : {trace, cuda_dot, ours}) std::filesystem::remove(p);
}
