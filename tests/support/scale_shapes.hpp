// Recordings whose compile once grew with the square of their size (issue 31, item 5): many
// transients alive together, many chained, many unordered writers of one buffer. Shared by the
// reliability tests and bench/bench_scale.cpp; public API only.
#pragma once

#include <cmdgraph/cmdgraph.hpp>

#include <cstddef>
#include <vector>

namespace cmdgraph::testing {

/// Floats in each transient of these shapes: 256 bytes, one arena alignment.
inline constexpr std::size_t scale_floats = 64;

/// n allocations first, then a fill and a free of each: every lifetime overlaps every other.
inline void record_transients_alive(CommandBuffer& cmd, std::size_t n) {
  std::vector<Transient<float>> ts;
  ts.reserve(n);
  for (std::size_t i = 0; i < n; ++i) ts.push_back(cmd.alloc<float>(scale_floats));
  for (auto& t : ts) {
    auto f = cmd.fill(t, 1.0f, scale_floats).after(t);
    cmd.free(t).after(f);
  }
}

/// A barrier, then alloc, fill, free n times, each alloc after the free before: one transient
/// alive at a time.
inline void record_transients_chained(CommandBuffer& cmd, std::size_t n) {
  Command last = cmd.barrier();
  for (std::size_t i = 0; i < n; ++i) {
    auto t = cmd.alloc<float>(scale_floats).after(last);
    auto f = cmd.fill(t, 1.0f, scale_floats).after(t);
    last = cmd.free(t).after(f);
  }
}

/// n host tasks each declared writing `buffer`, with no edges: n - 1 hazards under validate.
inline void record_unordered_writers(CommandBuffer& cmd, std::size_t n,
                                     const Buffer<float>& buffer) {
  for (std::size_t i = 0; i < n; ++i) cmd.host([] {}).writes(buffer);
}

/// The same writers, each after the one before: what validate passes (the error's success path).
inline void record_ordered_writers(CommandBuffer& cmd, std::size_t n, const Buffer<float>& buffer) {
  Command last = cmd.host([] {}).writes(buffer);
  for (std::size_t i = 1; i < n; ++i) last = cmd.host([] {}).writes(buffer).after(last);
}

}  // namespace cmdgraph::testing
