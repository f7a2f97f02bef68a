// loop_while on the host backend: passes while the condition holds (checked first), order
// around the loop, nested loops, re-launches, errors from the body and the condition, misuse.
#include "support/expect_error.hpp"
#include "support/loop_shapes.hpp"

#include <doctest/doctest.h>

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

using namespace cmdgraph;
using namespace cmdgraph::testing;

// Host tasks in a body tell when a body runs and throw from it; CUDA devices refuse them there,
// so these programs say they are host-only.
constexpr CompileOptions host_only{.portable = false};

TEST_CASE("host.loop.counts_while_the_condition_holds" * doctest::timeout(30)) {
  for (int limit : {0, 1, 7, 1000}) {
    CAPTURE(limit);
    Buffer<int> counters(Device::host(), 2);
    counters.data()[0] = counters.data()[1] = -5;  // poison
    CommandBuffer body("body");
    CommandBuffer cmd = counting_loop(counters, limit, body);
    Executable exe = compile(cmd, Device::host());
    Queue q(Device::host());
    for (int launch = 0; launch < 3; ++launch) {
      exe.launch(q).wait();
      CHECK(counters.data()[0] == limit);
      CHECK(counters.data()[1] == limit);  // the copy after the loop saw its last pass
    }
  }
}

TEST_CASE("host.loop.nested_loops_and_a_multi_command_body" * doctest::timeout(30)) {
  Buffer<int> counters(Device::host(), 3);
  int* c = counters.data();
  c[0] = c[1] = c[2] = -5;
  CommandBuffer inner_body("inner body"), outer_body("outer body");
  CommandBuffer cmd = nested_loops(c, inner_body, outer_body);
  Queue q(Device::host());
  compile(cmd, Device::host()).launch(q).wait();
  CHECK(c[0] == 5);
  CHECK(c[1] == 3);
  CHECK(c[2] == 15);
}

TEST_CASE("host.loop.errors_name_the_command" * doctest::timeout(30)) {
  Buffer<int> counters(Device::host(), 2);
  Queue q(Device::host());
  SUBCASE("a body task throwing ends the loop and skips its dependants") {
    CommandBuffer body("body");
    body.host([] { throw std::runtime_error("bad pass"); }).named("thrower");
    CommandBuffer cmd("loop");
    bool after_ran = false;
    auto loop = cmd.loop_while(body, Below{counters.data(), 0, 1}).named("spin");
    cmd.host([&] { after_ran = true; }).after(loop);
    counters.data()[0] = 0;
    auto e = CMDGRAPH_EXPECT_ERROR(compile(cmd, Device::host(), host_only).launch(q).wait(),
                                   errc::host_task_failed);
    REQUIRE(e);
    CHECK(mentions(*e, "body/thrower"));
    CHECK_FALSE(after_ran);
  }
  SUBCASE("a condition throwing names the loop") {
    struct Throws {
      bool operator()() const { throw std::runtime_error("no answer"); }
    };
    CommandBuffer body("body");
    CommandBuffer cmd("loop");
    cmd.loop_while(body, Throws{}).named("asks");
    auto e = CMDGRAPH_EXPECT_ERROR(compile(cmd, Device::host()).launch(q).wait(),
                                   errc::host_task_failed);
    REQUIRE(e);
    CHECK(mentions(*e, "asks"));
  }
  SUBCASE("misuse at record time") {
    CommandBuffer cmd("loop");
    CMDGRAPH_EXPECT_ERROR(cmd.loop_while(cmd, Below{counters.data(), 0, 1}), errc::invalid_argument);
    CommandBuffer gone("gone");
    CommandBuffer taker(std::move(gone));
    CMDGRAPH_EXPECT_ERROR(cmd.loop_while(gone, Below{counters.data(), 0, 1}), errc::invalid_handle);
    CommandBuffer body("body");
    cmd.loop_while(body, Below{counters.data(), 0, 1});
    CMDGRAPH_EXPECT_ERROR(body.parallel_for(1, Increment{counters.data(), 0}), errc::wrong_state);
  }
}

TEST_CASE("host.if.runs_its_body_once_or_not" * doctest::timeout(30)) {
  for (const auto& [value, expected] : {std::pair{3, 11}, std::pair{5, 10}, std::pair{9, 10}}) {
    CAPTURE(value);
    Buffer<int> counters(Device::host(), 2);
    counters.data()[0] = counters.data()[1] = -5;  // poison
    CommandBuffer then_body("then");
    CommandBuffer cmd = one_if(counters.data(), value, 5, then_body);
    Executable exe = compile(cmd, Device::host());
    Queue q(Device::host());
    for (int launch = 0; launch < 3; ++launch) {
      exe.launch(q).wait();
      CHECK(counters.data()[1] == expected);
    }
  }
}

TEST_CASE("host.if.a_loop_inside_an_if_inside_a_loop" * doctest::timeout(30)) {
  Buffer<int> counters(Device::host(), 3);
  int* c = counters.data();
  c[0] = c[1] = c[2] = -5;
  CommandBuffer inner_body("inner body"), then_body("then"), outer_body("outer body");
  CommandBuffer cmd = loop_if_loop(c, inner_body, then_body, outer_body);
  Queue q(Device::host());
  Executable exe = compile(cmd, Device::host());
  for (int launch = 0; launch < 2; ++launch) {
    exe.launch(q).wait();
    CHECK(c[0] == 4);
    CHECK(c[1] == 3);
    CHECK(c[2] == 6);
  }
}

TEST_CASE("host.if.errors_name_the_command" * doctest::timeout(30)) {
  Queue q(Device::host());
  SUBCASE("a body task throwing skips the if's dependants") {
    CommandBuffer body("then");
    body.host([] { throw std::runtime_error("bad"); }).named("thrower");
    CommandBuffer cmd("if");
    bool after_ran = false;
    auto maybe = cmd.if_then([] { return true; }, body).named("maybe");
    cmd.host([&] { after_ran = true; }).after(maybe);
    auto e = CMDGRAPH_EXPECT_ERROR(compile(cmd, Device::host(), host_only).launch(q).wait(),
                                   errc::host_task_failed);
    REQUIRE(e);
    CHECK(e->commands() == std::vector<std::string>{"then/thrower"});
    CHECK_FALSE(after_ran);
  }
  SUBCASE("a false condition runs nothing of the body") {
    CommandBuffer body("then");
    body.host([] { throw std::runtime_error("must not run"); });
    CommandBuffer cmd("if");
    cmd.if_then([] { return false; }, body);
    compile(cmd, Device::host(), host_only).launch(q).wait();
  }
  SUBCASE("a condition throwing names the if") {
    CommandBuffer body("then");
    CommandBuffer cmd("if");
    cmd.if_then([]() -> bool { throw std::runtime_error("no"); }, body).named("maybe");
    auto e = CMDGRAPH_EXPECT_ERROR(compile(cmd, Device::host()).launch(q).wait(),
                                   errc::host_task_failed);
    REQUIRE(e);
    CHECK(e->commands() == std::vector<std::string>{"maybe"});
  }
  SUBCASE("a buffer cannot run itself") {
    CommandBuffer cmd("if");
    auto e = CMDGRAPH_EXPECT_ERROR(cmd.if_then([] { return true; }, cmd), errc::invalid_argument);
    REQUIRE(e);
    CHECK(e->commands() == std::vector<std::string>{"if_then#0"});
  }
}
