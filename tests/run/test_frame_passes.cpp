// Frames recorded as passes (issue 33, items 1 and 4): an engine re-records its passes into
// secondary buffers every frame and a primary executes them. When only values changed, at any
// depth, the update takes them without analysing the frame again, and
// UpdateResult::commands_changed counts the commands whose values changed, those of executed
// buffers included; an unchanged pass costs a comparison. Every frame's launch matches a fresh
// compile of the same frame, on every backend this machine runs.
#include "support/backends.hpp"
#include "support/expect_error.hpp"

#include <cmdgraph/cmdgraph.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

using namespace cmdgraph;

namespace {

constexpr std::size_t passes = 3, lanes = 4, width = 32;

// A frame's values: per pass and lane, a fill value and how many elements it fills and copies;
// `deep` runs pass 0 inside a sub-pass of its own (an executed buffer two levels down).
struct Frame {
  int value[passes][lanes];
  std::size_t count[passes][lanes];
  bool deep = false;
};

Frame first_frame(bool deep = false) {
  Frame f{};
  f.deep = deep;
  for (std::size_t p = 0; p < passes; ++p) {
    for (std::size_t l = 0; l < lanes; ++l) {
      f.value[p][l] = static_cast<int>(100 * p + 10 * l + 1);
      f.count[p][l] = width;
    }
  }
  return f;
}

constexpr std::size_t cells = passes * lanes * width;

struct Memory {
  HostBuffer<int> in{cells}, out{cells};
};

// One way of recording frames: its pass buffers, re-recorded every frame (as an engine's
// per-thread command pools are), and the primary executing them.
struct Recorder {
  std::vector<std::unique_ptr<CommandBuffer>> pass;
  CommandBuffer sub{"sub"};
  CommandBuffer primary{"frame"};

  Recorder() {
    for (std::size_t p = 0; p < passes; ++p) {
      pass.push_back(std::make_unique<CommandBuffer>("pass " + std::to_string(p)));
    }
  }

  CommandBuffer& record(const Memory& m, const Frame& f) {
    for (std::size_t p = 0; p < passes; ++p) {
      CommandBuffer& cmd = p == 0 && f.deep ? sub : *pass[p];
      cmd.reset();
      for (std::size_t l = 0; l < lanes; ++l) {
        const std::size_t at = (p * lanes + l) * width;
        auto fill = cmd.fill(m.in.subview(at, width), f.value[p][l], f.count[p][l])
                        .named("fill " + std::to_string(l));
        cmd.copy(m.out.subview(at, width), m.in.subview(at, width), f.count[p][l])
            .after(fill)
            .named("copy " + std::to_string(l));
      }
    }
    if (f.deep) {
      pass[0]->reset();
      pass[0]->execute(sub).named("sub");
    }
    primary.reset();
    for (auto& p : pass) primary.execute(*p).named(p->name());
    return primary;
  }
};

std::vector<int> launch_and_read(Executable& exe, const Memory& m, Queue& q) {
  std::fill(m.in.data(), m.in.data() + cells, -7);
  std::fill(m.out.data(), m.out.data() + cells, -7);
  exe.launch(q).wait();
  return {m.out.data(), m.out.data() + cells};
}

// Frames on one backend: their memory, their recorder, and the executable compiled from the
// first.
struct Rig {
  Memory m;
  Recorder frames;
  Executable exe;
  Queue q;
  Rig(const Frame& first, const cmdgraph::testing::BackendOn& on)
      : exe(compile(frames.record(m, first), on.device, on.options())), q(on.device) {}
  UpdateResult update(const Frame& f, const UpdateOptions& options = {}) {
    return exe.update(frames.record(m, f), options);
  }
  std::vector<int> launch_and_read() { return ::launch_and_read(exe, m, q); }
  // What a fresh compile of frame `f` leaves in the output.
  std::vector<int> fresh(const Frame& f, const cmdgraph::testing::BackendOn& on) {
    Recorder again;
    Executable reference = compile(again.record(m, f), on.device, on.options());
    return ::launch_and_read(reference, m, q);
  }
};

}  // namespace

TEST_CASE("frame_passes.unchanged_passes_change_nothing" * doctest::timeout(60)) {
  CMDGRAPH_EACH_BACKEND(on) {
    for (const bool deep : {false, true}) {
      CAPTURE(deep);
      Rig rig(first_frame(deep), on);
      const std::vector<int> expected = rig.launch_and_read();
      for (int frame = 0; frame < 3; ++frame) {
        const UpdateResult r = rig.update(first_frame(deep));
        CHECK_FALSE(r.reinstantiated);
        CHECK(r.commands_changed == 0);
        CHECK(rig.launch_and_read() == expected);
      }
    }
  }
}

TEST_CASE("frame_passes.an_update_counts_the_changed_commands_of_every_pass" *
          doctest::timeout(60)) {
  CMDGRAPH_EACH_BACKEND(on) {
    for (const bool deep : {false, true}) {
      CAPTURE(deep);
      Frame f = first_frame(deep);
      Rig rig(f, on);
      rig.launch_and_read();

      f.value[0][1] = 991;  // one fill of pass 0 (of the sub-pass when deep)
      f.value[1][0] = 992;  // one of pass 1
      f.count[2][3] = 9;    // a fill and its copy in pass 2
      const UpdateResult r = rig.update(f);
      CHECK_FALSE(r.reinstantiated);
      CHECK(r.commands_changed == 4);
      const std::vector<int> seen = rig.launch_and_read();
      CHECK(seen[1 * width] == 991);
      CHECK(seen[lanes * width] == 992);
      CHECK(seen[(2 * lanes + 3) * width + 8] == 231);
      CHECK(seen[(2 * lanes + 3) * width + 9] == -7);  // past the new count: not copied

      // The next frame takes the values back: they count again, and the launch shows them.
      const UpdateResult back = rig.update(first_frame(deep));
      CHECK(back.commands_changed == 4);
      const std::vector<int> again = rig.launch_and_read();
      CHECK(again[1 * width] == 11);
      CHECK(again[(2 * lanes + 3) * width + 9] == 231);
    }
  }
}

TEST_CASE("frame_passes.a_pass_of_another_structure_takes_the_whole_path" *
          doctest::timeout(60)) {
  CMDGRAPH_EACH_BACKEND(on) {
    Rig rig(first_frame(), on);
    // Pass 0 runs inside a sub-pass now: another structure, which the update refuses
    // unless allowed to rebuild, and then takes whole.
    const Frame deep = first_frame(true);
    CMDGRAPH_EXPECT_ERROR(rig.update(deep), errc::update_refused);
    const UpdateResult r = rig.update(deep, {.reinstantiate_if_needed = true});
    CHECK(r.reinstantiated);
    CHECK(r.commands_changed == passes);
    const std::vector<int> expected = rig.fresh(deep, on);
    CHECK(rig.launch_and_read() == expected);
  }
}

TEST_CASE("frame_passes.a_pass_executed_twice_counts_once" * doctest::timeout(60)) {
  CMDGRAPH_EACH_BACKEND(on) {
    HostBuffer<int> data(4);
    CommandBuffer pass("pass"), primary("frame");
    auto frame = [&](int value) -> CommandBuffer& {
      pass.reset();
      pass.fill(data, value, 4).named("fill");
      primary.reset();
      auto first = primary.execute(pass).named("first");
      primary.execute(pass).named("second").after(first);
      return primary;
    };
    Executable exe = compile(frame(1), on.device, on.options());
    CHECK(exe.update(frame(1)).commands_changed == 0);
    CHECK(exe.update(frame(2)).commands_changed == 1);
    Queue q(on.device);
    exe.launch(q).wait();
    CHECK(data[3] == 2);
  }
}

TEST_CASE("frame_passes.a_new_value_the_device_cannot_reach_is_refused_by_name" *
          doctest::timeout(60)) {
  // Only the changed commands are checked for the device: an unreachable target, new in a pass
  // or at the top, is still refused, named where it sits, and the executable keeps its values.
  CMDGRAPH_EACH_BACKEND(on) {
    HostBuffer<int> data(4), top(4);
    const View<int> unreachable(data.data(), 4, MemorySpace::device, 7);  // no such device
    CommandBuffer pass("pass"), primary("frame");
    auto frame = [&](View<int> in_pass, View<int> at_top, int value) -> CommandBuffer& {
      pass.reset();
      auto first = pass.fill(data, value, 4).named("first");
      pass.fill(in_pass, value, 4).named("second").after(first);
      primary.reset();
      auto run = primary.execute(pass).named("pass");
      primary.fill(at_top, value, 4).named("top").after(run);
      return primary;
    };
    const View<int> own = data, top_view = top;
    Executable exe = compile(frame(own, top_view, 1), on.device, on.options());
    Queue q(on.device);
    for (const bool in_pass : {true, false}) {
      CAPTURE(in_pass);
      CommandBuffer& bad = in_pass ? frame(unreachable, top_view, 2) : frame(own, unreachable, 2);
      auto e = CMDGRAPH_EXPECT_ERROR(exe.update(bad), errc::device_mismatch);
      REQUIRE(e);
      CHECK(e->commands() == std::vector<std::string>{in_pass ? "pass/second" : "top"});
      data[0] = top[0] = -7;
      exe.launch(q).wait();
      CHECK(data[0] == 1);  // the values compiled, not the refused frame's
      CHECK(top[0] == 1);
    }
    CHECK(exe.update(frame(own, top_view, 3)).commands_changed == 3);
    exe.launch(q).wait();
    CHECK(data[3] == 3);
    CHECK(top[3] == 3);
  }
}

TEST_CASE("frame_passes.one_pass_run_where_two_ran_is_compared_with_each" *
          doctest::timeout(60)) {
  // Two passes that wrote 1 then 2 become one pass run twice writing 1: the second run's
  // value changed though the first's did not. The top-level fill's new count sends the frame
  // through a whole plan, whose comparison must still see the second run's new value.
  CMDGRAPH_EACH_BACKEND(on) {
    HostBuffer<int> data(4), top(4);
    CommandBuffer first("pass"), second("pass"), primary("frame");
    first.fill(data, 1, 4).named("fill");
    second.fill(data, 2, 4).named("fill");
    primary.fill(top, 9, 4).named("top");
    auto a = primary.execute(first).named("a");
    primary.execute(second).named("b").after(a);
    Executable exe = compile(primary, on.device, on.options());
    Queue q(on.device);
    exe.launch(q).wait();
    REQUIRE(data[3] == 2);

    CommandBuffer same("pass"), next("frame");
    same.fill(data, 1, 4).named("fill");
    next.fill(top.subview(0, 3), 9, 3).named("top");
    auto again = next.execute(same).named("a");
    next.execute(same).named("b").after(again);
    const UpdateResult r = exe.update(next);
    CHECK_FALSE(r.reinstantiated);
    CHECK(r.commands_changed == 2);  // the top fill, and the fill the second run runs
    data[3] = -7;
    exe.launch(q).wait();
    CHECK(data[3] == 1);
  }
}

TEST_CASE("frame_passes.two_passes_recorded_once_run_in_turn" * doctest::timeout(60)) {
  // Double-buffered passes: two buffers recorded once, of one structure and other values, and
  // the primary executes one or the other each frame. Each frame runs the pass it executes,
  // the one the executable ran two frames before included.
  CMDGRAPH_EACH_BACKEND(on) {
    HostBuffer<int> out(4);
    CommandBuffer even("pass"), odd("pass");
    even.fill(out, 1, 4).named("fill");
    odd.fill(out, 2, 4).named("fill");
    auto frame = [&](int n) {
      auto primary = std::make_unique<CommandBuffer>("frame");
      primary->execute(n % 2 ? odd : even).named("pass");
      return primary;
    };
    auto first = frame(0);
    Executable exe = compile(*first, on.device, on.options());
    Queue q(on.device);
    for (int n = 0; n < 6; ++n) {
      CAPTURE(n);
      auto primary = frame(n);
      CHECK(exe.update(*primary).commands_changed == (n == 0 ? 0 : 1));
      std::fill(out.data(), out.data() + 4, -7);
      exe.launch(q).wait();
      CHECK(out[3] == (n % 2 ? 2 : 1));
    }
  }
}

TEST_CASE("frame_passes.a_conditional_body_with_new_values_counts_its_commands" *
          doctest::timeout(60)) {
  // Host only: the condition is compiled for the host alone here.
  struct Always {
    bool operator()() const { return true; }
  };
  HostBuffer<int> data(8);
  CommandBuffer then("then"), primary("frame");
  auto frame = [&](int first, int second) -> CommandBuffer& {
    then.reset();
    then.fill(data.subview(0, 4), first, 4).named("first");
    then.fill(data.subview(4, 4), second, 4).named("second");
    primary.reset();
    primary.if_then(Always{}, then).named("if");
    return primary;
  };
  Executable exe = compile(frame(1, 2), Device::host());
  CHECK(exe.update(frame(1, 2)).commands_changed == 0);
  const UpdateResult r = exe.update(frame(1, 5));
  CHECK_FALSE(r.reinstantiated);
  CHECK(r.commands_changed == 1);
  Queue q(Device::host());
  exe.launch(q).wait();
  CHECK(data[0] == 1);
  CHECK(data[7] == 5);
}

TEST_CASE("frame_passes.a_failure_names_the_command_of_the_frame_taken" *
          doctest::timeout(60)) {
  // Host only: the host backend keeps a frame's labels while its commands keep their names.
  HostBuffer<int> data(4);
  CommandBuffer pass("pass"), primary("frame");
  auto frame = [&](int value, const std::string& name) -> CommandBuffer& {
    pass.reset();
    auto fill = pass.fill(data, value, 4).named("fill");
    pass.host([] { throw std::runtime_error("boom"); }).named(name).after(fill);
    primary.reset();
    primary.execute(pass).named("pass");
    return primary;
  };
  Executable exe = compile(frame(1, "first"), Device::host());
  Queue q(Device::host());
  for (const std::string name : {"first", "first", "second", "second", "first"}) {
    CAPTURE(name);
    exe.update(frame(static_cast<int>(name.size()), name));
    auto e = CMDGRAPH_EXPECT_ERROR(exe.launch(q).wait(), errc::host_task_failed);
    REQUIRE(e);
    CHECK(e->commands() == std::vector<std::string>{"pass/" + name});
    CHECK(data[0] == static_cast<int>(name.size()));
  }
}

TEST_CASE("frame_passes.random_frames_match_a_fresh_compile" * doctest::timeout(120)) {
  CMDGRAPH_EACH_BACKEND(on) {
    std::mt19937 rng(20261205);
    auto below = [&rng](std::size_t n) {
      return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng);
    };
    Frame f = first_frame();
    Rig rig(f, on);
    for (int frame = 0; frame < 40; ++frame) {
      CAPTURE(frame);
      // Some frames change nothing, some a value or several, some the structure.
      Frame before = f;
      const std::size_t changes = frame % 5 == 0 ? 0 : below(passes * lanes + 1);
      for (std::size_t c = 0; c < changes; ++c) {
        const std::size_t p = below(passes), l = below(lanes);
        if (below(2) == 0) {
          f.value[p][l] = static_cast<int>(below(1000));
        } else {
          f.count[p][l] = 1 + below(width);
        }
      }
      if (frame % 7 == 3) f.deep = !f.deep;
      std::size_t expect_changed = 0;
      for (std::size_t p = 0; p < passes; ++p) {
        for (std::size_t l = 0; l < lanes; ++l) {
          const bool count = f.count[p][l] != before.count[p][l];
          expect_changed += (count || f.value[p][l] != before.value[p][l]) + count;
        }
      }
      const UpdateResult r = rig.update(f, {.reinstantiate_if_needed = true});
      if (f.deep == before.deep) {
        CHECK_FALSE(r.reinstantiated);
        CHECK(r.commands_changed == expect_changed);
      }
      const std::vector<int> expected = rig.fresh(f, on);
      CHECK(rig.launch_and_read() == expected);
    }
  }
}
