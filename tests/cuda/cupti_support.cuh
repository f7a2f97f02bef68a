// What the CUPTI suites share: kernels of known length, compiling in CUPTI mode (or failing the
// test with the reason), and what CUPTI delivered (last_cupti_report) for failure messages.
#pragma once

#include "backend/cuda_launch/cupti_timing.hpp"
#include "cuda/kernels.cuh"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace cmdgraph::testing {

inline constexpr long long cycles_per_us = 1'980;  // H200 at its top clock; longer is fine

inline std::string report() { return cmdgraph::detail::last_cupti_report(); }

/// `cmd` compiled for the graph backend in CUPTI mode, profiling one launch in `every`; fails
/// the test (with the reason) when CUPTI is not what times it.
inline Executable traced(CommandBuffer& cmd, const Device& gpu, unsigned every = 1) {
  Executable exe = compile(cmd, gpu, {.backend = Backend::cuda_graph,
                                      .profile = ProfileMode::cupti, .profile_every = every});
  REQUIRE_MESSAGE(exe.stats().profile_mode == ProfileMode::cupti,
                  "not CUPTI: " << exe.stats().profile_reason);
  return exe;
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// Checks that `p` honours its edges: a parent ends before its child starts (GPU timestamps
/// within 1 us; a host task's times, on the host clock placed on CUPTI's, within 20 us).
inline void check_edge_order(const Profile& p) {
  for (const auto& [from, to] : p.edges) {
    const CommandTiming& a = p.commands[from];
    const CommandTiming& b = p.commands[to];
    const bool host = a.kind == CommandKind::host || b.kind == CommandKind::host;
    INFO(a.name << " -> " << b.name << ": " << a.end_ms << " then " << b.start_ms);
    CHECK(a.end_ms <= b.start_ms + (host ? 0.02 : 0.001));
  }
}

/// `exe` launched twice on `q` (the first pays the upload), and the second launch's profile.
inline Profile second_launch_profile(Executable& exe, Queue& q) {
  exe.launch(q).wait();
  exe.launch(q).wait();
  return exe.last_profile();
}

/// The command named `name` in `p`, or null.
inline const CommandTiming* find(const Profile& p, const std::string& name) {
  for (const CommandTiming& c : p.commands) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

}  // namespace cmdgraph::testing
