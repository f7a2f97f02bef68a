// if_else and switch_on on the host backend, and conditionals nested in each other: the branch
// each launch takes, every case and the values that name none, updates of body values, DOT,
// traces and stats, and the errors, each naming its command.
#include "support/conditional_oracle.hpp"
#include "support/expect_error.hpp"
#include "support/loop_shapes.hpp"

#include <doctest/doctest.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

using namespace cmdgraph;
using namespace cmdgraph::testing;

namespace {

std::vector<int> values(const Buffer<int>& b) { return {b.data(), b.data() + b.size()}; }

}  // namespace

TEST_CASE("host.conditional.if_else_takes_one_branch_each_launch" * doctest::timeout(30)) {
  Buffer<int> counters(Device::host(), 3);
  int* c = counters.data();
  c[0] = c[1] = c[2] = 0;
  CommandBuffer then_body("then"), else_body("else");
  CommandBuffer cmd = alternating_if_else(c, then_body, else_body);
  Executable exe = compile(cmd, Device::host());
  Queue q(Device::host());
  for (int k = 1; k <= 5; ++k) {
    exe.launch(q).wait();
    CHECK(values(counters) == std::vector<int>{k, k / 2, (k + 1) / 2});
  }
}

TEST_CASE("host.conditional.switch_runs_each_case_and_none_out_of_range" * doctest::timeout(30)) {
  Buffer<int> counters(Device::host(), 4);
  int* c = counters.data();
  c[0] = c[1] = c[2] = c[3] = 0;
  std::array<CommandBuffer, 3> cases{CommandBuffer("case0"), CommandBuffer("case1"),
                                     CommandBuffer("case2")};
  CommandBuffer cmd = cycling_switch(c, cases);
  Executable exe = compile(cmd, Device::host());
  Queue q(Device::host());
  for (int k = 1; k <= 11; ++k) {
    CAPTURE(k);
    exe.launch(q).wait();
    CHECK(values(counters) == cycling_switch_counts(k));
  }
}

TEST_CASE("host.conditional.selector_values_past_32_bits_name_no_case" * doctest::timeout(30)) {
  // 2^32 + 1 wraps onto case 1 as a 32-bit value; it must run nothing. Fixed{1} is the control.
  Buffer<int> counters(Device::host(), 3);
  int* c = counters.data();
  for (const bool wide : {true, false}) {
    CAPTURE(wide);
    c[0] = c[1] = c[2] = 0;
    CommandBuffer cmd("wide");
    std::array<CommandBuffer, 3> cases{CommandBuffer("a"), CommandBuffer("b"), CommandBuffer("c")};
    for (std::size_t k = 0; k < 3; ++k) cases[k].parallel_for(1, Increment{c, k});
    if (wide) {
      cmd.switch_on(Wide{1}, cases);
    } else {
      cmd.switch_on(Fixed{1}, cases);
    }
    Queue q(Device::host());
    compile(cmd, Device::host()).launch(q).wait();
    CHECK(values(counters) == std::vector<int>{0, wide ? 0 : 1, 0});
  }
}

TEST_CASE("host.conditional.nested_switch_loop_if_else" * doctest::timeout(30)) {
  Buffer<int> counters(Device::host(), 5);
  int* c = counters.data();
  for (int i = 0; i < 5; ++i) c[i] = -7;  // poison
  NestedConditionals nested(c);
  Executable exe = compile(nested.cmd, Device::host());
  Queue q(Device::host());
  for (int launch = 0; launch < 3; ++launch) {
    exe.launch(q).wait();
    CHECK(values(counters) == std::vector<int>{6, 1, 1, 2, 4});
  }
}

TEST_CASE("host.conditional.update_of_body_values_in_place" * doctest::timeout(30)) {
  Buffer<int> counters(Device::host(), 3);
  int* c = counters.data();
  auto poison = [&] { c[0] = c[1] = c[2] = -7; };
  ValuedConditionals first(c, {9, 11, 12, 0, 21, 22});
  Executable exe = compile(first.cmd, Device::host());
  Queue q(Device::host());
  poison();
  exe.launch(q).wait();
  CHECK(values(counters) == std::vector<int>{5, 11, 21});

  ValuedConditionals second(c, {1, 31, 32, 1, 41, 42});  // the other branch, the other case
  const UpdateResult result = exe.update(second.cmd);
  CHECK_FALSE(result.reinstantiated);
  poison();
  exe.launch(q).wait();
  CHECK(values(counters) == std::vector<int>{5, 32, 42});

  // A third case: another structure, refused in place naming the switch.
  ValuedConditionals third_case(c, {1, 31, 32, 2, 51, 52}, Restructured::third_case);
  CommandBuffer& third = third_case.cmd;
  auto e = CMDGRAPH_EXPECT_ERROR(exe.update(third), errc::update_refused);
  REQUIRE(e);
  CHECK(e->commands() == std::vector<std::string>{"pick"});
  CHECK(mentions(*e, "runs 3 bodies, ran 2"));
  poison();
  exe.launch(q).wait();  // refused: the values before it
  CHECK(values(counters) == std::vector<int>{5, 32, 42});
  CHECK(exe.update(third, {.reinstantiate_if_needed = true}).reinstantiated);
  poison();
  exe.launch(q).wait();
  CHECK(values(counters) == std::vector<int>{5, 32, 53});
}

TEST_CASE("host.conditional.changed_body_named_in_the_refusal" * doctest::timeout(30)) {
  Buffer<int> counters(Device::host(), 3);
  int* c = counters.data();
  ValuedConditionals first(c, {9, 11, 12, 0, 21, 22});
  Executable exe = compile(first.cmd, Device::host());
  ValuedConditionals longer(c, {9, 11, 12, 0, 21, 22}, Restructured::longer_else);
  auto e = CMDGRAPH_EXPECT_ERROR(exe.update(longer.cmd), errc::update_refused);
  REQUIRE(e);
  CHECK(e->commands() == std::vector<std::string>{"else/one more"});
}

TEST_CASE("host.conditional.dot_trace_and_stats_name_each_kind" * doctest::timeout(30)) {
  Buffer<int> counters(Device::host(), 3);
  ValuedConditionals v(counters.data(), {9, 11, 12, 0, 21, 22});
  Executable exe = compile(v.cmd, Device::host(), {.profile = true});
  CHECK(exe.stats().conditionals == 2);
  CHECK(exe.stats().conditional_graphs == 0);
  Queue q(Device::host());
  exe.launch(q).wait();
  const std::string path =
      (std::filesystem::temp_directory_path() / "cmdgraph_conditional.dot").string();
  exe.write_dot(path);
  std::stringstream dot;
  dot << std::ifstream(path).rdbuf();
  std::filesystem::remove(path);
  CHECK(dot.str().find("branch\\nif_else 'then' (1), 'else' (1)") != std::string::npos);
  CHECK(dot.str().find("shape=hexagon") != std::string::npos);
  CHECK(dot.str().find("pick\\nswitch_on 'case0' (1), 'case1' (1)") != std::string::npos);
  CHECK(dot.str().find("shape=invtrapezium") != std::string::npos);
  const Profile p = exe.last_profile();
  REQUIRE(p.commands.size() == 3);
  CHECK(p.commands[1].kind == CommandKind::if_else);
  CHECK(p.commands[2].kind == CommandKind::switch_on);
  const std::string trace = p.trace_json();
  CHECK(trace.find(R"("cat":"if_else")") != std::string::npos);
  CHECK(trace.find(R"("cat":"switch_on")") != std::string::npos);
  CHECK(std::string(to_string(CommandKind::if_else)) == "if_else");
  CHECK(std::string(to_string(CommandKind::switch_on)) == "switch_on");
}

TEST_CASE("host.conditional.errors_name_the_command" * doctest::timeout(30)) {
  Queue q(Device::host());
  Buffer<int> counters(Device::host(), 4);
  int* c = counters.data();
  SUBCASE("a switch needs a case") {
    CommandBuffer cmd("switch");
    auto e = CMDGRAPH_EXPECT_ERROR(cmd.switch_on(Fixed{0}, std::span<CommandBuffer>{}),
                                   errc::invalid_argument);
    REQUIRE(e);
    CHECK(e->commands() == std::vector<std::string>{"switch_on#0"});
    CHECK(cmd.size() == 0);
  }
  SUBCASE("a buffer cannot be its own branch, and nothing is recorded or sealed") {
    CommandBuffer cmd("if"), other("other");
    auto e = CMDGRAPH_EXPECT_ERROR(cmd.if_else(Even{c, 0}, other, cmd), errc::invalid_argument);
    REQUIRE(e);
    CHECK(e->commands() == std::vector<std::string>{"if_else#0"});
    CHECK_FALSE(other.sealed());
    CHECK(cmd.size() == 0);
  }
  SUBCASE("a moved-from case") {
    CommandBuffer cmd("switch"), a("a"), gone("gone");
    CommandBuffer taker(std::move(gone));
    auto e = CMDGRAPH_EXPECT_ERROR(cmd.switch_on(Fixed{0}, {a, gone}), errc::invalid_handle);
    REQUIRE(e);
    CHECK(e->commands() == std::vector<std::string>{"switch_on#0"});
    CHECK_FALSE(a.sealed());
  }
  SUBCASE("bodies are sealed; one buffer may be several cases") {
    CommandBuffer cmd("switch"), a("a");
    a.parallel_for(1, Increment{c, 1});
    c[1] = 0;
    cmd.switch_on(Fixed{1}, {a, a});
    CHECK(a.sealed());
    CMDGRAPH_EXPECT_ERROR(a.parallel_for(1, Increment{c, 1}), errc::wrong_state);
    compile(cmd, Device::host()).launch(q).wait();
    CHECK(c[1] == 1);
  }
  SUBCASE("a branch's task throwing skips the command's dependants") {
    CommandBuffer then_body("then"), else_body("else");
    then_body.host([] {});
    else_body.host([] { throw std::runtime_error("bad"); }).named("thrower");
    CommandBuffer cmd("if");
    bool after_ran = false;
    auto choose = cmd.if_else([] { return false; }, then_body, else_body);
    cmd.host([&] { after_ran = true; }).after(choose);
    const CompileOptions host_only{.portable = false};  // host tasks in bodies
    auto e = CMDGRAPH_EXPECT_ERROR(compile(cmd, Device::host(), host_only).launch(q).wait(),
                                   errc::host_task_failed);
    REQUIRE(e);
    CHECK(e->commands() == std::vector<std::string>{"else/thrower"});
    CHECK_FALSE(after_ran);
  }
  SUBCASE("a selector throwing names the switch") {
    CommandBuffer a("a");
    CommandBuffer cmd("switch");
    cmd.switch_on([]() -> int { throw std::runtime_error("no"); }, {a}).named("pick");
    auto e = CMDGRAPH_EXPECT_ERROR(compile(cmd, Device::host()).launch(q).wait(),
                                   errc::host_task_failed);
    REQUIRE(e);
    CHECK(e->commands() == std::vector<std::string>{"pick"});
  }
}

TEST_CASE("host.conditional.oracle_orders_bodies_by_their_commands_edges" * doctest::timeout(120)) {
  const DagShape shapes[] = {DagShape::chain, DagShape::fan, DagShape::layered, DagShape::random,
                             DagShape::shuffled};
  for (std::uint32_t i = 0; i < 40; ++i) {
    const Dag dag = random_dag(shapes[i % 5], 1 + (i * 37) % 300, 15000 + i);
    CAPTURE(dag.describe());
    const std::string verdict = run_conditional_dag_on_host(dag, 3);
    CHECK_MESSAGE(verdict.empty(), verdict);
  }
}
