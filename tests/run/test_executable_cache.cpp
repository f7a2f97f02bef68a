// ExecutableCache (issue 33, item 3): a frame whose structure the cache has seen updates the
// executable kept for it instead of compiling; a structure seen before never compiles again
// while it is kept. Limits evict the least recently used; a hash collision is a miss, never a
// wrong hit; leases keep an executable to one user at a time, on every backend.
#include "support/backends.hpp"
#include "support/expect_error.hpp"

#include <cmdgraph/cmdgraph.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <optional>
#include <string>
#include <thread>
#include <vector>

using namespace cmdgraph;

namespace {

constexpr std::size_t width = 16;

// A frame of `shape` (its number of fill -> copy chains) writing `value` into every chain's
// output: the structure is the shape, the values are the frame's own.
void record(CommandBuffer& cmd, const HostBuffer<int>& in, const HostBuffer<int>& out,
            std::size_t shape, int value) {
  for (std::size_t c = 0; c < shape; ++c) {
    auto fill = cmd.fill(in.subview(c * width, width), value + static_cast<int>(c), width)
                    .named("fill " + std::to_string(c));
    cmd.copy(out.subview(c * width, width), in.subview(c * width, width), width)
        .after(fill)
        .named("copy " + std::to_string(c));
  }
}

struct Frames {
  HostBuffer<int> in{8 * width}, out{8 * width};

  // Records a frame, takes its executable from `cache`, launches it and checks what it wrote.
  bool run(ExecutableCache& cache, const cmdgraph::testing::BackendOn& on, std::size_t shape,
           int value, Queue& queue) {
    std::fill(out.data(), out.data() + 8 * width, -7);
    CommandBuffer cmd("frame");
    record(cmd, in, out, shape, value);
    auto exe = cache.acquire(cmd, on.device, on.options());
    exe->launch(queue).wait();
    for (std::size_t c = 0; c < shape; ++c) {
      for (std::size_t i = 0; i < width; ++i) {
        if (out[c * width + i] != value + static_cast<int>(c)) return false;
      }
    }
    return exe.hit();
  }
};

struct Never {
  CMDGRAPH_HOST_DEVICE bool operator()() const { return false; }
};

}  // namespace

TEST_CASE("cache.a_seen_structure_is_updated_not_compiled" * doctest::timeout(120)) {
  CMDGRAPH_EACH_BACKEND(on) {
    ExecutableCache cache;
    Queue q(on.device);
    Frames f;
    CHECK_FALSE(f.run(cache, on, 3, 10, q));  // compiled: a miss
    for (int frame = 1; frame < 6; ++frame) CHECK(f.run(cache, on, 3, 10 * frame, q));
    const CacheStats stats = cache.stats();
    CHECK(stats.misses == 1);
    CHECK(stats.hits == 5);
    CHECK(stats.executables == 1);
    REQUIRE(stats.entries.size() == 1);
    CHECK(stats.entries[0].hits == 5);
    CHECK(stats.entries[0].backend == (on.backend == Backend::host ? Backend::host : on.backend));
  }
}

TEST_CASE("cache.structures_seen_before_never_compile_again" * doctest::timeout(120)) {
  CMDGRAPH_EACH_BACKEND(on) {
    ExecutableCache cache;
    Queue q(on.device);
    Frames f;
    // Three structures in turn: each compiles once, then every frame of it is a hit.
    for (int frame = 0; frame < 12; ++frame) {
      const std::size_t shape = 1 + frame % 3;
      CHECK(f.run(cache, on, shape, frame, q) == (frame >= 3));
    }
    CHECK(cache.stats().misses == 3);
    CHECK(cache.stats().hits == 9);
  }
}

TEST_CASE("cache.options_and_devices_are_part_of_the_key" * doctest::timeout(60)) {
  ExecutableCache cache;
  HostBuffer<int> in{8 * width}, out{8 * width};
  for (Hazards hazards : {Hazards::validate, Hazards::infer, Hazards::validate}) {
    CommandBuffer cmd("frame");
    record(cmd, in, out, 2, 1);
    cache.acquire(cmd, Device::host(), {.hazards = hazards});
  }
  CHECK(cache.stats().misses == 2);
  CHECK(cache.stats().hits == 1);
  if (Device::count() > 0) {  // the same frame for another device: compiled for it
    for (int twice = 0; twice < 2; ++twice) {
      CommandBuffer cmd("frame");
      record(cmd, in, out, 2, 1);
      cache.acquire(cmd, Device::cuda(0), {.hazards = Hazards::validate});
    }
    CHECK(cache.stats().misses == 3);
    CHECK(cache.stats().hits == 2);
  }
}

TEST_CASE("cache.the_least_recently_used_goes_first" * doctest::timeout(60)) {
  const auto on = cmdgraph::testing::available_backends().front();
  ExecutableCache cache({.executables = 2});
  Queue q(on.device);
  Frames f;
  f.run(cache, on, 1, 1, q);  // miss: {1}
  f.run(cache, on, 2, 2, q);  // miss: {2, 1}
  CHECK(f.run(cache, on, 1, 3, q));  // hit: {1, 2}
  f.run(cache, on, 3, 4, q);  // miss, evicts 2: {3, 1}
  CHECK(f.run(cache, on, 1, 5, q));
  CHECK_FALSE(f.run(cache, on, 2, 6, q));  // compiled again
  const CacheStats stats = cache.stats();
  CHECK(stats.evictions == 2);
  CHECK(stats.executables == 2);
  CHECK(stats.misses == 4);
  REQUIRE(stats.entries.size() == 2);
  CHECK(stats.entries[0].hits == 0);  // shape 2, just compiled
  CHECK(stats.entries[1].hits == 2);  // shape 1
}

TEST_CASE("cache.a_byte_budget_bounds_the_memory_kept" * doctest::timeout(60)) {
  // Each executable holds its transients' arena; a budget of less than two arenas keeps one.
  const auto on = cmdgraph::testing::available_backends().front();
  HostBuffer<int> out(1024);
  auto frame = [&](std::size_t count) {
    CommandBuffer cmd("frame");
    auto scratch = cmd.alloc<int>(count);
    auto fill = cmd.fill(scratch, 3, count).after(scratch);
    cmd.copy(out.subview(0, count), scratch, count).after(fill);
    return cmd;
  };
  ExecutableCache cache({.device_bytes = 6000});
  for (std::size_t count : {1024, 1000, 1024}) {
    CommandBuffer cmd = frame(count);
    auto exe = cache.acquire(cmd, on.device, on.options());
    CHECK(exe->stats().transient_bytes >= count * sizeof(int));
  }
  const CacheStats stats = cache.stats();
  CHECK(stats.misses == 3);  // another transient size is another structure
  CHECK(stats.executables == 1);
  CHECK(stats.evictions == 2);
  CHECK(stats.device_bytes <= 6000);
  CHECK(stats.device_bytes >= 1024 * sizeof(int));
}

TEST_CASE("cache.colliding_hashes_are_misses_not_wrong_hits" * doctest::timeout(120)) {
  // Every recording hashes alike: only the full comparison tells structures apart.
  CMDGRAPH_EACH_BACKEND(on) {
    ExecutableCache cache;
    detail::collide_structure_hashes(cache);
    Queue q(on.device);
    Frames f;
    CHECK_FALSE(f.run(cache, on, 2, 1, q));
    CHECK_FALSE(f.run(cache, on, 3, 2, q));  // same hash, another structure
    CHECK(f.run(cache, on, 2, 3, q));
    CHECK(f.run(cache, on, 3, 4, q));
    CHECK(cache.stats().collisions >= 1);

    // Structures that differ only inside a conditional body (its condition is compiled for
    // the host alone in this file, which the host backend runs).
    if (on.backend != Backend::host) continue;
    HostBuffer<int> flags(2);
    auto conditional = [&](std::size_t body_commands) {
      CommandBuffer body("body");
      for (std::size_t i = 0; i < body_commands; ++i) body.fill(flags.subview(i, 1), 1, 1);
      CommandBuffer cmd("frame");
      cmd.if_then(Never{}, body).named("if");
      auto exe = cache.acquire(cmd, on.device, on.options());
      exe->launch(q).wait();
      return exe.hit();
    };
    CHECK_FALSE(conditional(1));
    CHECK_FALSE(conditional(2));
    CHECK(conditional(1));
    CHECK(conditional(2));
  }
}

TEST_CASE("cache.edges_in_another_order_or_twice_are_the_same_structure" * doctest::timeout(60)) {
  // The structure hash reads edges as distinct_edges gives them: a frame whose edges were
  // recorded in another order, or one of them twice, finds the executable; another edge misses.
  ExecutableCache cache;
  HostBuffer<int> cells(4);
  Queue q(Device::host());
  auto frame = [&](const std::vector<std::pair<int, int>>& edges) {
    CommandBuffer cmd("frame");
    std::vector<Command> fills;
    for (std::size_t i = 0; i < 4; ++i) fills.push_back(cmd.fill(cells.subview(i, 1), 1, 1));
    for (const auto& [parent, child] : edges) {
      fills[static_cast<std::size_t>(child)].after(fills[static_cast<std::size_t>(parent)]);
    }
    auto exe = cache.acquire(cmd, Device::host());
    exe->launch(q).wait();
    return exe.hit();
  };
  CHECK_FALSE(frame({{0, 1}, {1, 2}, {2, 3}, {0, 3}}));
  CHECK(frame({{0, 1}, {1, 2}, {2, 3}, {0, 3}}));
  CHECK(frame({{2, 3}, {0, 3}, {1, 2}, {0, 1}}));
  CHECK(frame({{0, 1}, {1, 2}, {1, 2}, {2, 3}, {0, 3}}));
  CHECK_FALSE(frame({{0, 1}, {1, 2}, {2, 3}, {0, 2}}));
  CHECK(cache.stats().collisions == 0);
}

TEST_CASE("cache.a_leased_executable_serves_one_user" * doctest::timeout(60)) {
  CMDGRAPH_EACH_BACKEND(on) {
    ExecutableCache cache;
    HostBuffer<int> in{8 * width}, out{8 * width};
    auto acquire = [&](int value) {
      CommandBuffer cmd("frame");
      record(cmd, in, out, 2, value);
      return cache.acquire(cmd, on.device, on.options());
    };
    {
      auto first = acquire(1);
      auto second = acquire(2);  // the first is in use: another executable of the structure
      CHECK_FALSE(second.hit());
      CHECK(&*first != &*second);
      CHECK(cache.stats().entries[0].in_use);
    }
    CHECK(acquire(3).hit());
    CHECK(cache.stats().executables == 2);
    CHECK_FALSE(cache.stats().entries[0].in_use);
  }
}

TEST_CASE("cache.a_lease_outlives_its_cache" * doctest::timeout(60)) {
  const auto on = cmdgraph::testing::available_backends().front();
  HostBuffer<int> in{8 * width}, out{8 * width};
  std::optional<CachedExecutable> kept;
  {
    ExecutableCache cache;
    CommandBuffer cmd("frame");
    record(cmd, in, out, 1, 42);
    kept.emplace(cache.acquire(cmd, on.device, on.options()));
  }
  Queue q(on.device);
  (*kept)->launch(q).wait();
  CHECK(out[0] == 42);
  kept.reset();
}

TEST_CASE("cache.an_update_error_loses_nothing" * doctest::timeout(60)) {
  // A frame the kept executable refuses for a reason of its own (a hazard) is the user's
  // error: it reaches the caller, and the kept executable still serves the next frame.
  const auto on = cmdgraph::testing::available_backends().front();
  HostBuffer<int> data(8);
  ExecutableCache cache;
  auto frame = [&](std::size_t second) {
    CommandBuffer cmd("frame");
    cmd.fill(data.subview(0, 4), 1, 4).named("first");
    cmd.fill(data.subview(second, 4), 2, 4).named("second");
    return cmd;
  };
  CommandBuffer a = frame(4);
  cache.acquire(a, on.device, on.options());
  CommandBuffer overlapping = frame(2);
  CMDGRAPH_EXPECT_ERROR(cache.acquire(overlapping, on.device, on.options()), errc::hazard);
  CommandBuffer b = frame(4);
  CHECK(cache.acquire(b, on.device, on.options()).hit());
  CHECK_FALSE(cache.stats().entries[0].in_use);
}

TEST_CASE("cache.threads_share_one_cache" * doctest::timeout(180)) {
  // Four threads, each its own queue and memory, cycle two structures: every frame's result is
  // its own, and each thread's frames are hits once a kept executable is free for it; a fifth
  // reads the cache's stats all along.
  const auto on = cmdgraph::testing::available_backends().front();
  ExecutableCache cache;
  constexpr int threads = 4, frames = 40;
  std::atomic<int> wrong{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      Queue q(on.device);
      Frames f;
      for (int frame = 0; frame < frames; ++frame) {
        const int value = 1000 * t + frame;
        std::fill(f.out.data(), f.out.data() + 8 * width, -7);
        CommandBuffer cmd("frame");
        record(cmd, f.in, f.out, 1 + frame % 2, value);
        auto exe = cache.acquire(cmd, on.device, on.options());
        exe->launch(q).wait();
        if (f.out[0] != value) ++wrong;
      }
    });
  }
  // stats() reads the kept executables while the workers update theirs.
  std::atomic<bool> done{false};
  std::size_t seen = 0;
  std::thread reader([&] {
    while (!done) seen = std::max(seen, cache.stats().executables);
  });
  for (auto& t : pool) t.join();
  done = true;
  reader.join();
  CHECK(seen <= 2 * threads);
  CHECK(wrong == 0);
  const CacheStats stats = cache.stats();
  CHECK(stats.hits + stats.misses == threads * frames);
  CHECK(stats.misses <= 2 * threads);  // at most one executable per structure and thread
}
