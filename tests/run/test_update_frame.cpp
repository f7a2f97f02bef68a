// Update frames (Executable::update_frame): the thread that opens one holds the executable for
// all its updates until the frame closes. Updates of every kind made in the frame reach the
// next launch; launch() and clone() in the frame, and other threads' updates and launches, are
// refused with Error(concurrent_use) and change nothing; an update refused inside the frame
// leaves it held; a frame opened twice, moved, or outliving its executable, is harmless. Every
// backend this machine runs.
#include "support/backends.hpp"
#include "support/expect_error.hpp"

#include <cmdgraph/cmdgraph.hpp>

#include <doctest/doctest.h>

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

using namespace cmdgraph;
using namespace cmdgraph::testing;

namespace {

constexpr std::size_t width = 16;

struct Lanes {
  HostBuffer<int> in{width}, out{width};
};

struct Recorded {
  FillCommand<int> fill;
  CopyCommand<int> copy;
};

// A fill of `value` over `in`, then `in` copied to `out`.
Recorded record(CommandBuffer& cmd, Lanes& m, int value) {
  auto fill = cmd.fill(m.in.view(), value, width).named("fill");
  auto copy = cmd.copy(m.out.view(), m.in.view(), width).named("copy").after(fill);
  return {fill, copy};
}

// The frame's buffer recorded with value 1 and compiled for `target`, and a queue there.
struct Compiled {
  explicit Compiled(const BackendOn& target)
      : r(record(cmd, m, 1)), exe(compile(cmd, target.device, target.options())),
        q(target.device) {}
  Lanes m;
  CommandBuffer cmd{"frame"};
  Recorded r;
  Executable exe;
  Queue q;
};

std::vector<int> copied(const Lanes& m) { return {m.out.data(), m.out.data() + width}; }
std::vector<int> all(int value) { return std::vector<int>(width, value); }

// What `call` throws when another thread makes it, or nullopt when it throws nothing.
template <class Call>
std::optional<Error> from_another_thread(Call call) {
  std::optional<Error> thrown;
  std::thread([&] {
    try {
      call();
    } catch (const Error& e) {
      thrown = e;
    }
  }).join();
  return thrown;
}

}  // namespace

TEST_CASE("update_frame.updates_in_a_frame_reach_the_launch_after_it") {
  CMDGRAPH_EACH_BACKEND(target) {
    Compiled c(target);
    auto& [m, cmd, r, exe, q] = c;
    exe.launch(q).wait();
    REQUIRE(copied(m) == all(1));
    for (int frame = 2; frame < 6; ++frame) {
      {
        UpdateFrame held = exe.update_frame();
        exe.update(r.fill, m.in.view(), frame - 1, width);
        exe.update(r.fill, m.in.view(), frame, width);  // the last one counts
        auto launched = CMDGRAPH_EXPECT_ERROR(exe.launch(q), errc::concurrent_use);
        REQUIRE(launched);
        CHECK(std::string(launched->what()).find("update frame") != std::string::npos);
        CMDGRAPH_EXPECT_ERROR(exe.clone(), errc::concurrent_use);
      }
      exe.launch(q).wait();
      CHECK(copied(m) == all(frame));
    }
    // A re-recorded buffer is taken in a frame as well.
    {
      UpdateFrame held = exe.update_frame();
      CommandBuffer again("frame");
      record(again, m, 9);
      CHECK(exe.update(again).commands_changed == 1);
    }
    exe.launch(q).wait();
    CHECK(copied(m) == all(9));
  }
}

TEST_CASE("update_frame.other_threads_wait_for_it_to_close") {
  CMDGRAPH_EACH_BACKEND(target) {
    Compiled c(target);
    auto& [m, cmd, r, exe, q] = c;
    {
      UpdateFrame held = exe.update_frame();
      exe.update(r.fill, m.in.view(), 2, width);
      const auto updated =
          from_another_thread([&] { exe.update(r.fill, m.in.view(), 3, width); });
      REQUIRE(updated);
      CHECK(updated->code() == errc::concurrent_use);
      CHECK(std::string(updated->what()).find("holds an update frame") != std::string::npos);
      const auto launched = from_another_thread([&] { exe.launch(q).wait(); });
      REQUIRE(launched);
      CHECK(launched->code() == errc::concurrent_use);
      const auto framed = from_another_thread([&] { UpdateFrame mine = exe.update_frame(); });
      REQUIRE(framed);
      CHECK(framed->code() == errc::concurrent_use);
      // A refused update inside the frame leaves the frame held: another thread is still
      // refused after it.
      CMDGRAPH_EXPECT_ERROR(exe.update(r.copy, m.out.view(), m.in.view(), width + 1),
                            errc::invalid_argument);
      const auto after = from_another_thread([&] { exe.update(r.fill, m.in.view(), 3, width); });
      REQUIRE(after);
      CHECK(after->code() == errc::concurrent_use);
    }
    // Closed: another thread updates and launches it as usual.
    CHECK_FALSE(from_another_thread([&] {
      exe.update(r.fill, m.in.view(), 4, width);
      exe.launch(q).wait();
    }));
    CHECK(copied(m) == all(4));
  }
}

TEST_CASE("update_frame.opened_twice_or_outliving_its_executable") {
  CMDGRAPH_EACH_BACKEND(target) {
    Compiled c(target);
    auto& [m, cmd, r, compiled, q] = c;
    auto exe = std::make_unique<Executable>(std::move(compiled));
    {
      UpdateFrame held = exe->update_frame();
      CMDGRAPH_EXPECT_ERROR(exe->update_frame(), errc::wrong_state);
      exe->update(r.fill, m.in.view(), 5, width);  // the first frame still holds it
      CHECK(from_another_thread([&] { exe->launch(q); }));
    }
    exe->launch(q).wait();
    CHECK(copied(m) == all(5));
    // The executable moved and then destroyed while a frame of it is open.
    std::optional<UpdateFrame> orphan;
    orphan = exe->update_frame();
    Executable moved = std::move(*exe);
    exe.reset();
    moved.update(r.fill, m.in.view(), 6, width);
    { Executable gone = std::move(moved); }
    orphan.reset();  // touches nothing destroyed (AddressSanitizer says so)
    // A frame moved holds on; the moved-from one closes nothing.
    Executable next = compile(cmd, target.device, target.options());
    UpdateFrame first = next.update_frame();
    UpdateFrame second = std::move(first);
    first.close();
    CMDGRAPH_EXPECT_ERROR(next.launch(q), errc::concurrent_use);
    second.close();
    next.launch(q).wait();
    CHECK(copied(m) == all(1));
  }
}
