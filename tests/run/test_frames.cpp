// Frames (issue 33, item 1): a buffer re-recorded every frame updates its executable at the cost
// of what changed. Only commands whose values differ are set, one by one, and
// UpdateResult::commands_changed counts them; anything more than values (a new host task,
// another structure) takes the whole path. Every frame's launch matches a fresh compile of the
// same frame, on every backend this machine runs.
#include "support/backends.hpp"
#include "support/expect_error.hpp"

#include <cmdgraph/cmdgraph.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <iterator>
#include <new>
#include <type_traits>
#include <utility>
#include <cstddef>
#include <random>
#include <vector>

using namespace cmdgraph;

namespace {

constexpr std::size_t lanes = 6, width = 64;

// One frame: per lane a fill of `value[l]` over its first `count[l]` elements, then a copy of
// them to the output lane `target[l]` (each lane's own unless the frame moves it); `extra`
// adds a command at the end (another structure).
struct Frame {
  int value[lanes];
  std::size_t count[lanes];
  std::size_t target[lanes];
  bool extra = false;
};

Frame first_frame() {
  Frame f{};
  for (std::size_t l = 0; l < lanes; ++l) {
    f.value[l] = static_cast<int>(10 * l + 1);
    f.count[l] = width;
    f.target[l] = l;
  }
  return f;
}

struct Memory {
  HostBuffer<int> in{lanes * width}, out{lanes * width}, tail{1};
};

struct Recorded {
  std::vector<FillCommand<int>> fills;
  std::vector<CopyCommand<int>> copies;
};

Recorded record(CommandBuffer& cmd, const Memory& m, const Frame& f) {
  Recorded r;
  for (std::size_t l = 0; l < lanes; ++l) {
    auto lane = m.in.subview(l * width, width);
    r.fills.push_back(cmd.fill(lane, f.value[l], f.count[l]).named("fill " + std::to_string(l)));
    r.copies.push_back(cmd.copy(m.out.subview(f.target[l] * width, width), lane, f.count[l])
                           .after(r.fills.back())
                           .named("copy " + std::to_string(l)));
  }
  if (f.extra) cmd.fill(m.tail, 5, 1).named("extra");
  return r;
}

// The executable of frame `f`, compiled for `on`.
Executable compiled(const Memory& m, const Frame& f, const cmdgraph::testing::BackendOn& on) {
  CommandBuffer cmd("frame");
  record(cmd, m, f);
  return compile(cmd, on.device, on.options());
}

void poison(const Memory& m) {
  std::fill(m.in.data(), m.in.data() + lanes * width, -7);
  std::fill(m.out.data(), m.out.data() + lanes * width, -7);
  m.tail[0] = -7;
}

std::vector<int> launch_and_read(Executable& exe, const Memory& m, Queue& q) {
  poison(m);
  exe.launch(q).wait();
  std::vector<int> seen(m.out.data(), m.out.data() + lanes * width);
  seen.push_back(m.tail[0]);
  return seen;
}

struct Store {
  int* out;
  int value;
  CMDGRAPH_HOST_DEVICE void operator()(std::size_t i) const { out[i] = value; }
};

}  // namespace

TEST_CASE("frames.an_unchanged_frame_changes_nothing" * doctest::timeout(60)) {
  CMDGRAPH_EACH_BACKEND(on) {
    Memory m;
    const Frame f = first_frame();
    Executable exe = compiled(m, f, on);
    Queue q(on.device);
    const std::vector<int> expected = launch_and_read(exe, m, q);
    for (int frame = 0; frame < 3; ++frame) {
      CommandBuffer again("frame");
      record(again, m, f);
      const UpdateResult r = exe.update(again);
      CHECK_FALSE(r.reinstantiated);
      CHECK(r.commands_changed == 0);
      CHECK(launch_and_read(exe, m, q) == expected);
    }
  }
}

TEST_CASE("frames.an_update_counts_the_commands_whose_values_changed" * doctest::timeout(60)) {
  CMDGRAPH_EACH_BACKEND(on) {
    Memory m;
    Frame f = first_frame();
    Executable exe = compiled(m, f, on);
    Queue q(on.device);
    launch_and_read(exe, m, q);

    f.value[2] = 99;  // one fill
    f.count[4] = 9;   // a fill and its copy
    CommandBuffer next("frame");
    record(next, m, f);
    const UpdateResult r = exe.update(next);
    CHECK_FALSE(r.reinstantiated);
    CHECK(r.commands_changed == 3);
    const std::vector<int> seen = launch_and_read(exe, m, q);
    CHECK(seen[2 * width] == 99);
    CHECK(seen[4 * width + 8] == 41);
    CHECK(seen[4 * width + 9] == -7);  // past the new count: not copied
  }
}

TEST_CASE("frames.handles_follow_the_buffer_last_taken" * doctest::timeout(60)) {
  CMDGRAPH_EACH_BACKEND(on) {
    Memory m;
    Frame f = first_frame();
    CommandBuffer cmd("frame");
    const Recorded old = record(cmd, m, f);
    Executable exe = compile(cmd, on.device, on.options());
    Queue q(on.device);
    f.value[0] = 3;
    CommandBuffer next("frame");
    const Recorded now = record(next, m, f);
    CHECK(exe.update(next).commands_changed == 1);
    exe.update(now.fills[1], m.in.subview(width, width), 77, width);
    CMDGRAPH_EXPECT_ERROR(exe.update(old.fills[1], m.in.subview(width, width), 78, width),
                          errc::foreign_handle);
    const std::vector<int> seen = launch_and_read(exe, m, q);
    CHECK(seen[0] == 3);
    CHECK(seen[width] == 77);
  }
}

TEST_CASE("frames.more_than_values_takes_the_whole_path" * doctest::timeout(60)) {
  CMDGRAPH_EACH_BACKEND(on) {
    Memory m;
    std::atomic<int> ran{0};
    auto frame = [&](CommandBuffer& cmd, int task) {
      record(cmd, m, first_frame());
      cmd.host([&ran, task] { ran = task; }).named("task");
    };
    CommandBuffer cmd("frame");
    frame(cmd, 1);
    Executable exe = compile(cmd, on.device, on.options());
    Queue q(on.device);
    CommandBuffer next("frame");
    frame(next, 2);  // another host task: not a value an update hook takes
    const UpdateResult r = exe.update(next);
    CHECK_FALSE(r.reinstantiated);
    CHECK(r.commands_changed == next.size());
    exe.launch(q).wait();
    CHECK(ran == 2);
  }
}

TEST_CASE("frames.random_frames_match_a_fresh_compile" * doctest::timeout(120)) {
  CMDGRAPH_EACH_BACKEND(on) {
    std::mt19937 rng(20261204);
    auto below = [&rng](std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng); };
    Memory m;
    Frame f = first_frame();
    Executable exe = compiled(m, f, on);
    Queue q(on.device);
    for (int frame = 0; frame < 60; ++frame) {
      CAPTURE(frame);
      // Some frames change nothing, some a lane or all, some the structure.
      const std::size_t changes = frame % 5 == 0 ? 0 : below(lanes + 1);
      for (std::size_t c = 0; c < changes; ++c) {
        const std::size_t l = below(lanes);
        switch (below(3)) {
          case 0: f.value[l] = static_cast<int>(below(1000)); break;
          case 1: f.count[l] = 1 + below(width); break;
          default: std::swap(f.target[l], f.target[below(lanes)]);
        }
      }
      if (frame % 7 == 3) f.extra = !f.extra;
      CommandBuffer next("frame"), fresh("frame");
      record(next, m, f);
      record(fresh, m, f);
      const UpdateResult r = exe.update(next, {.reinstantiate_if_needed = true});
      CHECK(r.commands_changed <= next.size());
      Executable reference = compile(fresh, on.device, on.options());
      const std::vector<int> expected = launch_and_read(reference, m, q);
      CHECK(launch_and_read(exe, m, q) == expected);
    }
  }
}

TEST_CASE("frames.padding_is_not_a_change" * doctest::timeout(60)) {
  // A functor whose padding holds whatever the stack held: its stored copy has the padding
  // zeroed (g++ and clang++ know where it is), so an unchanged frame stays unchanged.
  struct Padded {
    int* out;
    int value;  // then 4 bytes of padding
    void operator()(std::size_t i) const { out[i] = value; }
  };
  static_assert(!std::has_unique_object_representations_v<Padded>);
  const bool cleared = detail::padding_clearer<Padded>() != nullptr;
  REQUIRE(cleared);
  HostBuffer<int> out(4);
  auto frame = [&](CommandBuffer& cmd, int value, unsigned char noise) {
    alignas(Padded) unsigned char garbage[sizeof(Padded)];
    std::fill(std::begin(garbage), std::end(garbage), noise);
    auto* f = new (garbage) Padded;  // default-initialized: the padding keeps the noise
    f->out = out.data();
    f->value = value;
    cmd.parallel_for(4, *f).named("set");
  };
  CommandBuffer cmd("frame");
  frame(cmd, 1, 0x11);
  Executable exe = compile(cmd, Device::host());
  const std::pair<int, std::size_t> frames[] = {{1, 0}, {1, 0}, {2, 1}, {2, 0}};
  unsigned char noise = 0x22;
  for (const auto& [value, changed] : frames) {
    CommandBuffer next("frame");
    frame(next, value, noise);
    noise = static_cast<unsigned char>(noise + 0x11);
    CHECK(exe.update(next).commands_changed == changed);
  }
  Queue q(Device::host());
  exe.launch(q).wait();
  CHECK(out[3] == 2);
}

TEST_CASE("frames.a_frame_that_makes_a_conflict_is_refused" * doctest::timeout(60)) {
  // Values that change what a command touches are analysed again: two unordered fills that
  // come to overlap are a hazard, as compile() would say.
  CMDGRAPH_EACH_BACKEND(on) {
    HostBuffer<int> data(8);
    auto frame = [&](CommandBuffer& cmd, std::size_t second) {
      cmd.fill(data.subview(0, 4), 1, 4).named("first");
      cmd.fill(data.subview(second, 4), 2, 4).named("second");
    };
    CommandBuffer cmd("frame");
    frame(cmd, 4);
    Executable exe = compile(cmd, on.device, on.options());
    CommandBuffer same("frame");
    frame(same, 4);
    CHECK(exe.update(same).commands_changed == 0);
    CommandBuffer overlapping("frame");
    frame(overlapping, 2);
    auto e = CMDGRAPH_EXPECT_ERROR(exe.update(overlapping), errc::hazard);
    REQUIRE(e);
    CHECK(cmdgraph::testing::mentions(*e, "'first'"));
  }
}

TEST_CASE("frames.a_frame_that_declares_access_is_analysed_again" * doctest::timeout(60)) {
  // The executable's frame touched no memory the analysis looks at (a values-only update then
  // skips collecting access); a frame of the same commands and values that declares two
  // unordered writes of one buffer is a hazard, as compile() would say. The plan decides: the
  // host backend shows it for all.
  HostBuffer<int> data(8);
  auto frame = [&](CommandBuffer& cmd, bool declared) {
    auto first = cmd.parallel_for(8, Store{data.data(), 1}).named("first");
    auto second = cmd.parallel_for(8, Store{data.data(), 2}).named("second");
    if (declared) {
      first.writes(data);
      second.writes(data);
    }
  };
  CommandBuffer cmd("frame");
  frame(cmd, false);
  Executable exe = compile(cmd, Device::host());
  CommandBuffer same("frame");
  frame(same, false);
  CHECK(exe.update(same).commands_changed == 0);
  CommandBuffer declaring("frame");
  frame(declaring, true);
  auto e = CMDGRAPH_EXPECT_ERROR(exe.update(declaring), errc::hazard);
  REQUIRE(e);
  CHECK(cmdgraph::testing::mentions(*e, "'first'"));
}

TEST_CASE("frames.new_values_the_backend_cannot_run_are_refused" * doctest::timeout(60)) {
  // A frame of new values alone is checked where its values are new: a fill whose target is
  // said to be cuda:0's memory (at the same address, so nothing it touches moves and the
  // frame stays on the values path) is refused by the host backend, naming it, and the
  // executable keeps the values it had.
  HostBuffer<int> data(8), other(8);
  auto frame = [&](CommandBuffer& cmd, int value, MemorySpace space, int device) {
    const View<int> target(data.data(), 4, space, device);
    cmd.fill(other.subview(0, 4), value, 4).named("other");
    cmd.fill(target, value, 4).named("target");
  };
  CommandBuffer cmd("frame");
  frame(cmd, 1, MemorySpace::host, -1);
  Executable exe = compile(cmd, Device::host());
  CommandBuffer values("frame");
  frame(values, 2, MemorySpace::host, -1);
  CHECK(exe.update(values).commands_changed == 2);
  CommandBuffer on_gpu("frame");
  frame(on_gpu, 3, MemorySpace::device, 0);
  auto e = CMDGRAPH_EXPECT_ERROR(exe.update(on_gpu), errc::device_mismatch);
  REQUIRE(e);
  CHECK(cmdgraph::testing::mentions(*e, "'target'"));
  std::fill(data.data(), data.data() + 8, -7);
  std::fill(other.data(), other.data() + 8, -7);
  Queue q(Device::host());
  exe.launch(q).wait();
  CHECK(data[0] == 2);
  CHECK(other[0] == 2);
}
