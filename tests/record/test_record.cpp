// Recording: handles, names, argument copies, barriers, nesting, moves and resets.
#include "command/argument_store.hpp"
#include "plan/plan.hpp"
#include "record/recording.hpp"
#include "support/expect_error.hpp"

#include <cmdgraph/cmdgraph.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <utility>

using namespace cmdgraph;

namespace {

// Same type as a __global__ function's host stub; recorded, never run here.
void saxpy(int n, float a, const float* x, float* y) { (void)n, (void)a, (void)x, (void)y; }

struct Scale {
  const float* in;
  float* out;
  float factor;
  void operator()(std::size_t i) const { out[i] = in[i] * factor; }
};

template <class... A>
concept SaxpyArgs = requires(CommandBuffer& c, A... a) { c.launch(&saxpy, LaunchConfig{}, a...); };

bool has_edge(const detail::Recording& rec, std::uint32_t parent, std::uint32_t child) {
  return std::any_of(rec.edges().begin(), rec.edges().end(), [&](const detail::Edge& e) {
    return e.parent == parent && e.child == child;
  });
}

}  // namespace

// A wrong argument list is a compile error, not a run-time one.
static_assert(SaxpyArgs<int, float, float*, float*>);
static_assert(SaxpyArgs<long, double, const float*, float*>);  // converted
static_assert(!SaxpyArgs<int, float, float*>);                 // too few
static_assert(!SaxpyArgs<int, float, float*, float*, int>);    // too many
// An argument that does not convert fails in a static_assert naming it: the test
// compile_errors (tests/record/compile_errors) shows it.

TEST_CASE("record.names.default_and_custom" * doctest::timeout(10)) {
  CommandBuffer cmd("step");
  float in[4]{}, out[4]{};
  auto a = cmd.parallel_for(4, Scale{in, out, 2.0f});
  auto b = cmd.host([] {}).named("load");
  auto c = cmd.copy(host_view(out, 4), host_view(in, 4), 4);
  CHECK(a.name() == "parallel_for#0");
  CHECK(b.name() == "load");
  CHECK(c.name() == "copy#2");
  CHECK(cmd.size() == 3);
  CHECK(cmd.name() == "step");
}

TEST_CASE("record.names.made_when_asked_for" * doctest::timeout(30)) {
  // Default names are made from the kind and the index when asked for: every number of
  // digits, a name taken back by named(""), and the labels a host failure reports (the top
  // level's own, an executed buffer's prefixed) all say "kind#index".
  CommandBuffer cmd("many");
  std::vector<Command> commands;
  for (int i = 0; i < 1001; ++i) commands.push_back(cmd.host([] {}));
  CHECK(commands[0].name() == "host#0");
  CHECK(commands[9].name() == "host#9");
  CHECK(commands[10].name() == "host#10");
  CHECK(commands[99].name() == "host#99");
  CHECK(commands[100].name() == "host#100");
  CHECK(commands[1000].name() == "host#1000");
  commands[10].named("ten");
  CHECK(commands[10].name() == "ten");
  commands[10].named("");
  CHECK(commands[10].name() == "host#10");

  for (const bool in_pass : {true, false}) {
    CommandBuffer pass("pass"), frame("frame");
    for (int i = 0; i < 12; ++i) pass.host([] {});
    pass.host([in_pass] {
      if (in_pass) throw std::runtime_error("no");
    });
    frame.host([] {});
    frame.execute(pass);
    frame.host([in_pass] {
      if (!in_pass) throw std::runtime_error("no");
    });
    Executable exe = compile(frame, Device::host());
    Queue q(Device::host());
    auto e = CMDGRAPH_EXPECT_ERROR(exe.launch(q).wait(), errc::host_task_failed);
    REQUIRE(e);
    CHECK(e->commands() == std::vector<std::string>{in_pass ? "pass/host#12" : "host#2"});
  }
}

TEST_CASE("record.launch.arguments_converted_and_copied" * doctest::timeout(10)) {
  CommandBuffer cmd("k");
  float x[8]{}, y[8]{};
  int n = 8;
  double a = 2.5;
  auto k = cmd.launch(&saxpy, LaunchConfig{{2}, {4}, 0}, n, a, x, y);
  n = 99;  // the recording keeps its own copies
  a = -1;
  const detail::Recording& rec = *detail::recording_of(cmd);
  const auto& payload = std::get<detail::KernelPayload>(rec.commands()[k.index()].payload);
  CHECK(payload.function == reinterpret_cast<const void*>(&saxpy));
  CHECK(payload.param_count == 4);
  const auto& args = rec.arguments();
  CHECK(args.get<LaunchConfig>(payload.config).grid.x == 2);
  CHECK(args.get<LaunchConfig>(payload.config).block.x == 4);
  int stored_n;
  float stored_a;
  const float* stored_x;
  std::memcpy(&stored_n, args.data(payload.first_param + 0), sizeof(int));
  std::memcpy(&stored_a, args.data(payload.first_param + 1), sizeof(float));
  std::memcpy(&stored_x, args.data(payload.first_param + 2), sizeof(float*));
  CHECK(args.size(payload.first_param + 1) == sizeof(float));  // converted to the parameter type
  CHECK(stored_n == 8);
  CHECK(stored_a == 2.5f);
  CHECK(stored_x == x);
}

TEST_CASE("record.arguments.alike_stores_compare_whole" * doctest::timeout(10)) {
  // Two stores of the same values recorded in the same order hold the same bytes over all of
  // them, the gaps alignment leaves between values included, whatever the memory held before:
  // a frame's comparison takes a command's values as one range.
  detail::ArgumentStore a, b;
  for (auto [store, dirt] : {std::pair{&a, 0xaaaaaaaaaaaaaaaaULL}, {&b, ~0ULL}}) {
    store->add_value(dirt);
    store->add_value(dirt);
    store->truncate(0);  // what a refused command leaves behind
    store->add_value('x');
    store->add_value(std::uint64_t{7});  // 7 bytes of gap before it
    store->add_value(std::uint16_t{3});
  }
  CHECK(a.same_bytes(b, 0, 3));
  const std::uint64_t eight = 8;
  b.assign(1, &eight);
  CHECK_FALSE(a.same_bytes(b, 0, 3));
  CHECK(a.same_bytes(b, 0, 1));
  CHECK(a.same_bytes(b, 2, 3));
}

TEST_CASE("record.parallel_for.functor_copied_aligned" * doctest::timeout(10)) {
  struct alignas(32) Wide {
    double v[4];
    void operator()(std::size_t) const {}
  };
  CommandBuffer cmd("pf");
  cmd.host([] {});  // misalign the arena on purpose
  Wide w{{1, 2, 3, 4}};
  auto p = cmd.parallel_for(10, w);
  w.v[0] = 100;
  const auto& rec = *detail::recording_of(cmd);
  const auto& pf = std::get<detail::ParallelForPayload>(rec.commands()[p.index()].payload);
  const void* stored = rec.arguments().data(pf.functor);
  CHECK(reinterpret_cast<std::uintptr_t>(stored) % 32 == 0);
  CHECK(static_cast<const Wide*>(stored)->v[0] == 1);
  CHECK(rec.arguments().get<std::size_t>(pf.count()) == 10);
  CHECK(static_cast<bool>(pf.host != nullptr));
  CHECK(static_cast<bool>(pf.device_kernel == nullptr));  // host-only translation unit
}

TEST_CASE("record.edges.fluent_and_depends_on" * doctest::timeout(10)) {
  CommandBuffer cmd("e");
  auto a = cmd.host([] {});
  auto b = cmd.host([] {});
  auto c = cmd.host([] {}).after(a, b).named("c");
  auto d = cmd.host([] {});
  cmd.depends_on(d, c);
  std::vector<Command> many{a, b};
  auto e = cmd.host([] {}).after_all(many);
  const auto& rec = *detail::recording_of(cmd);
  CHECK(has_edge(rec, a.index(), c.index()));
  CHECK(has_edge(rec, b.index(), c.index()));
  CHECK(has_edge(rec, c.index(), d.index()));
  CHECK(has_edge(rec, a.index(), e.index()));
  CHECK(has_edge(rec, b.index(), e.index()));
  CHECK(c.name() == "c");
}

TEST_CASE("record.barrier.orders_segments" * doctest::timeout(10)) {
  CommandBuffer cmd("b");
  auto a = cmd.host([] {});
  auto b = cmd.host([] {});
  auto bar = cmd.barrier();
  auto c = cmd.host([] {});
  auto d = cmd.host([] {});
  auto bar2 = cmd.barrier();
  auto bar3 = cmd.barrier();  // an empty segment still chains
  auto e = cmd.host([] {});
  const auto& rec = *detail::recording_of(cmd);
  CHECK(has_edge(rec, a.index(), bar.index()));
  CHECK(has_edge(rec, b.index(), bar.index()));
  CHECK(has_edge(rec, bar.index(), c.index()));
  CHECK(has_edge(rec, bar.index(), d.index()));
  CHECK(has_edge(rec, c.index(), bar2.index()));
  CHECK(has_edge(rec, bar2.index(), bar3.index()));
  CHECK(has_edge(rec, bar3.index(), e.index()));
  CHECK(bar.name() == "barrier#2");
  CHECK(rec.edges().size() == 8);  // linear in the commands, not quadratic
}

TEST_CASE("record.execute.seals_secondary" * doctest::timeout(10)) {
  CommandBuffer secondary("inner");
  secondary.host([] {});
  CommandBuffer primary("outer");
  auto x = primary.execute(secondary);
  CHECK(x.name() == "execute#0");
  CHECK(secondary.sealed());
  CHECK_FALSE(primary.sealed());
  CMDGRAPH_EXPECT_ERROR(secondary.host([] {}), errc::wrong_state);
  primary.execute(secondary);  // a sealed buffer may be executed many times
  CHECK(primary.size() == 2);
}

TEST_CASE("record.move.keeps_handles" * doctest::timeout(10)) {
  CommandBuffer first("moved");
  auto a = first.host([] {});
  CommandBuffer second = std::move(first);
  auto b = second.host([] {}).after(a);
  CHECK(a.name() == "host#0");
  CHECK(second.size() == 2);
  CHECK(has_edge(*detail::recording_of(second), a.index(), b.index()));
}

TEST_CASE("record.reset.starts_empty" * doctest::timeout(10)) {
  CommandBuffer cmd("r");
  cmd.host([] {});
  compile(cmd, Device::host());
  CHECK(cmd.sealed());
  cmd.reset();
  CHECK_FALSE(cmd.sealed());
  CHECK(cmd.size() == 0);
  CHECK(cmd.host([] {}).name() == "host#0");
}

TEST_CASE("record.compile_twice.independent_executables" * doctest::timeout(10)) {
  int runs = 0;
  CommandBuffer cmd("twice");
  cmd.host([&] { ++runs; });
  Executable one = compile(cmd, Device::host());
  Executable two = compile(cmd, Device::host());  // a sealed recording compiles again
  Queue q(Device::host());
  one.launch(q);
  two.launch(q);
  q.wait();
  CHECK(runs == 2);
}

TEST_CASE("record.fresh_buffer.starts_with_room_of_the_last_of_its_name" * doctest::timeout(10)) {
  // A frame recorded into a new buffer each time, under one name, grows nothing while it
  // records after the first; a buffer of another name starts empty.
  float y = 0;
  auto room = [](const CommandBuffer& cmd) {
    const detail::Recording& rec = *detail::recording_of(cmd);
    return std::pair{rec.commands().capacity(), rec.edges().capacity()};
  };
  {
    CommandBuffer frame("room.frame");
    Command previous = frame.launch(&saxpy, LaunchConfig{{1}, {1}}, 1, 2.0f, &y, &y);
    for (int i = 1; i < 300; ++i) {
      previous = frame.launch(&saxpy, LaunchConfig{{1}, {1}}, i, 2.0f, &y, &y).after(previous);
    }
  }
  CommandBuffer again("room.frame");
  CHECK(room(again).first >= 300);
  CHECK(room(again).second >= 299);
  const CommandBuffer other("room.other");
  CHECK(room(other) == std::pair<std::size_t, std::size_t>{0, 0});
  CommandBuffer moved_over("room.moved");
  for (int i = 0; i < 40; ++i) moved_over.host([] {});
  moved_over = CommandBuffer("room.elsewhere");  // the old recording is given up here
  CHECK(room(CommandBuffer("room.moved")).first >= 40);
}

TEST_CASE("record.fresh_buffer.every_pass_of_a_frame_keeps_its_room" * doctest::timeout(10)) {
  // An engine's frame is many passes, each a buffer of its own name made anew every frame on
  // one thread (bench_frames' frame: 8 passes and a primary): each starts with the room
  // its name held last frame, for as many names as a frame of 64 passes has.
  float y = 0;
  constexpr std::size_t passes = 64;
  auto name = [](std::size_t p) { return "room.pass " + std::to_string(p); };
  for (int frame = 0; frame < 3; ++frame) {
    std::vector<CommandBuffer> pass;
    for (std::size_t p = 0; p < passes; ++p) pass.emplace_back(name(p));
    for (std::size_t p = 0; frame > 0 && p < passes; ++p) {
      CHECK_MESSAGE(detail::recording_of(pass[p])->commands().capacity() >= 10 + p, name(p),
                    " starts without its room");
    }
    for (std::size_t p = 0; p < passes; ++p) {
      for (std::size_t i = 0; i < 10 + p; ++i) {
        pass[p].launch(&saxpy, LaunchConfig{{1}, {1}}, static_cast<int>(i), 2.0f, &y, &y);
      }
    }
  }
}

TEST_CASE("record.fresh_buffer.a_frame_a_little_larger_grows_nothing" * doctest::timeout(10)) {
  // Structures that take turns (a cache's frames) differ by a few commands: the room reserved
  // for the next buffer of a name has some to spare, so a frame up to an eighth larger than the
  // last records without growing (or copying) what it has recorded.
  float y = 0;
  auto record = [&](CommandBuffer& frame, Command previous, int from, int to) {
    for (int i = from; i < to; ++i) {
      previous = frame.launch(&saxpy, LaunchConfig{{1}, {1}}, i, 2.0f, &y, &y).after(previous);
    }
  };
  auto held = [](const CommandBuffer& cmd) {
    const detail::Recording& rec = *detail::recording_of(cmd);
    return std::tuple{rec.commands().data(), rec.edges().data(), rec.arguments().data(0)};
  };
  for (const int n : {400, 410, 440, 449}) {
    {
      CommandBuffer last("room.cycling");
      record(last, last.launch(&saxpy, LaunchConfig{{1}, {1}}, 0, 2.0f, &y, &y), 1, 400);
    }
    CommandBuffer frame("room.cycling");
    const Command first = frame.launch(&saxpy, LaunchConfig{{1}, {1}}, 0, 2.0f, &y, &y);
    const auto before = held(frame);
    record(frame, first, 1, n);
    CHECK_MESSAGE(held(frame) == before, n, " commands after 400 moved what was recorded");
  }
}
