// if_else and switch_on on a GPU, on both CUDA backends (the graph backend's conditional IF
// and SWITCH nodes; the streams backend's graph of its own per command, launched on its
// stream): branches decided on the device by what an earlier kernel of the same launch wrote,
// every case and the values that name none, conditionals nested in each other, updates of body
// values in place, profiles, the ordering oracle, and the errors, each naming its command.
#include "cuda/kernels.cuh"
#include "support/conditional_oracle.hpp"
#include "support/expect_error.hpp"
#include "support/loop_shapes.hpp"

#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <random>
#include <string>
#include <utility>
#include <vector>

using namespace cmdgraph;
using namespace cmdgraph::testing;

TEST_CASE("cuda.conditional.if_else_follows_what_a_kernel_wrote" * doctest::timeout(60)) {
  // The tick kernel moves counters[0] each launch; the branch follows its parity on the device
  // (one executable, no host involvement between launches): then and else alternate.
  const Device gpu = Device::cuda(0);
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    Buffer<int> counters(gpu, 3);
    write_ints(counters, {0, 0, 0});
    CommandBuffer then_body("then"), else_body("else");
    CommandBuffer cmd = alternating_if_else(counters.data(), then_body, else_body);
    Executable exe = compile(cmd, gpu, {.backend = backend});
    REQUIRE(exe.backend() == backend);
    Queue q(gpu);
    for (int k = 1; k <= 6; ++k) {
      exe.launch(q).wait();
      CHECK(read_ints(counters) == std::vector<int>{k, k / 2, (k + 1) / 2});
    }
  }
}

TEST_CASE("cuda.conditional.switch_runs_each_case_and_none_out_of_range" * doctest::timeout(60)) {
  // Over 11 launches the selector takes 0, 1, 2, 3 (past the cases), -1 (negative) by turns.
  const Device gpu = Device::cuda(0);
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    Buffer<int> counters(gpu, 4);
    write_ints(counters, {0, 0, 0, 0});
    std::array<CommandBuffer, 3> cases{CommandBuffer("case0"), CommandBuffer("case1"),
                                       CommandBuffer("case2")};
    CommandBuffer cmd = cycling_switch(counters.data(), cases);
    Executable exe = compile(cmd, gpu, {.backend = backend});
    REQUIRE(exe.backend() == backend);
    Queue q(gpu);
    for (int k = 1; k <= 11; ++k) {
      CAPTURE(k);
      exe.launch(q).wait();
      CHECK(read_ints(counters) == cycling_switch_counts(k));
    }
  }
}

TEST_CASE("cuda.conditional.selector_values_past_32_bits_name_no_case" * doctest::timeout(60)) {
  // 2^32 + 1 wraps onto case 1 as a 32-bit handle value: it must run nothing. Fixed{1} is the
  // control that the same shape runs case 1.
  const Device gpu = Device::cuda(0);
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    for (const bool wide : {true, false}) {
      CAPTURE(wide);
      Buffer<int> counters(gpu, 3);
      write_ints(counters, {0, 0, 0});
      int* c = counters.data();
      std::array<CommandBuffer, 3> cases{CommandBuffer("a"), CommandBuffer("b"),
                                         CommandBuffer("c")};
      for (std::size_t k = 0; k < 3; ++k) cases[k].parallel_for(1, Increment{c, k});
      CommandBuffer cmd("wide");
      if (wide) {
        cmd.switch_on(Wide{1}, cases);
      } else {
        cmd.switch_on(Fixed{1}, cases);
      }
      Queue q(gpu);
      compile(cmd, gpu, {.backend = backend}).launch(q).wait();
      CHECK(read_ints(counters) == std::vector<int>{0, wide ? 0 : 1, 0});
    }
  }
}

TEST_CASE("cuda.conditional.one_buffer_as_several_bodies" * doctest::timeout(60)) {
  // One body graph per case, each from the same buffer: case 1 and case 2 both count.
  const Device gpu = Device::cuda(0);
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    Buffer<int> counters(gpu, 3);
    write_ints(counters, {0, 0, 0});
    int* c = counters.data();
    CommandBuffer a("a"), b("b");
    a.parallel_for(1, Increment{c, 0});
    b.parallel_for(1, Increment{c, 1});
    CommandBuffer cmd("shared");
    auto first = cmd.switch_on(Fixed{1}, {a, b, b});
    cmd.switch_on(Fixed{2}, {a, b, b}).after(first);
    cmd.if_else(Even{c, 2}, a, a).after(first);
    Queue q(gpu);
    compile(cmd, gpu, {.backend = backend}).launch(q).wait();
    CHECK(read_ints(counters) == std::vector<int>{1, 2, 0});
  }
}

TEST_CASE("cuda.conditional.nested_switch_loop_if_else" * doctest::timeout(60)) {
  // A switch inside a loop, with an if_else, a loop and an empty body as its cases.
  const Device gpu = Device::cuda(0);
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    Buffer<int> counters(gpu, 5);
    NestedConditionals nested(counters.data());
    Executable exe = compile(nested.cmd, gpu, {.backend = backend});
    CHECK(exe.stats().conditionals == 4);  // outer, pick, parity, inner
    CHECK(exe.stats().conditional_graphs == (backend == Backend::streams ? 1 : 0));
    Queue q(gpu);
    for (int launch = 0; launch < 3; ++launch) {
      poison(counters);
      exe.launch(q).wait();
      CHECK(read_ints(counters) == std::vector<int>{6, 1, 1, 2, 4});
    }
  }
}

TEST_CASE("cuda.conditional.update_of_body_values_in_place" * doctest::timeout(60)) {
  // Re-recorded with other values in the branches, the cases, the condition and the selector:
  // cudaGraphExecUpdate takes a conditional node's body values (the graph's, or the streams
  // backend's own graph per command), and the next launch takes the other branch and case.
  const Device gpu = Device::cuda(0);
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    Buffer<int> counters(gpu, 3);
    ValuedConditionals first(counters.data(), {9, 11, 12, 0, 21, 22});
    Executable exe = compile(first.cmd, gpu, {.backend = backend});
    Queue q(gpu);
    poison(counters);
    exe.launch(q).wait();
    CHECK(read_ints(counters) == std::vector<int>{5, 11, 21});

    ValuedConditionals second(counters.data(), {1, 31, 32, 1, 41, 42});
    const UpdateResult result = exe.update(second.cmd);
    CHECK_FALSE(result.reinstantiated);
    poison(counters);
    exe.launch(q).wait();
    CHECK(read_ints(counters) == std::vector<int>{5, 32, 42});

    ValuedConditionals third(counters.data(), {9, 51, 52, 7, 61, 62});  // case 7: none
    CHECK_FALSE(exe.update(third.cmd).reinstantiated);
    poison(counters);
    exe.launch(q).wait();
    CHECK(read_ints(counters) == std::vector<int>{5, 51, -1});
  }
}

TEST_CASE("cuda.conditional.update_cuda_may_refuse_names_the_body_command" * doctest::timeout(60)) {
  // A copy in a case changes from device->device to pinned->device: the same structure by our
  // rules, CUDA's update check decides. Taken in place, the next launch must copy from the new
  // source; refused, the error names the copy inside the case, and a rebuild takes it.
  const Device gpu = Device::cuda(0);
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    Buffer<int> src(gpu, 4), dst(gpu, 4);
    HostBuffer<int> pinned(4);
    write_ints(src, {1, 2, 3, 4});
    for (int i = 0; i < 4; ++i) pinned[i] = 10 + i;
    auto record = [&](CommandBuffer& cmd, CommandBuffer& body, bool from_pinned) {
      if (from_pinned) {
        body.copy(dst, pinned, 4).named("move");
      } else {
        body.copy(dst, src, 4).named("move");
      }
      cmd.switch_on(Fixed{0}, {body}).named("pick");
    };
    CommandBuffer v1("v"), b1("case0");
    record(v1, b1, false);
    Executable exe = compile(v1, gpu, {.backend = backend});
    Queue q(gpu);
    poison(dst);
    exe.launch(q).wait();
    CHECK(read_ints(dst) == std::vector<int>{1, 2, 3, 4});
    CommandBuffer v2("v"), b2("case0");
    record(v2, b2, true);
    try {
      CHECK_FALSE(exe.update(v2).reinstantiated);
      MESSAGE("CUDA took a copy's memory-kind change inside a conditional body in place");
    } catch (const Error& e) {
      CHECK(e.code() == errc::update_refused);
      CHECK(mentions(e, "CUDA refused"));
      CHECK(e.commands() == std::vector<std::string>{"case0/move"});
      MESSAGE("CUDA refused a copy's memory-kind change inside a conditional body: " << e.what());
      poison(dst);
      exe.launch(q).wait();  // refused: the copy before it still runs
      CHECK(read_ints(dst) == std::vector<int>{1, 2, 3, 4});
      CHECK(exe.update(v2, {.reinstantiate_if_needed = true}).reinstantiated);
    }
    poison(dst);
    exe.launch(q).wait();
    CHECK(read_ints(dst) == std::vector<int>{10, 11, 12, 13});
  }
}

TEST_CASE("cuda.conditional.profiled_and_traced_by_kind" * doctest::timeout(60)) {
  const Device gpu = Device::cuda(0);
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    Buffer<int> counters(gpu, 3);
    ValuedConditionals v(counters.data(), {9, 11, 12, 1, 21, 22});
    Executable exe = compile(v.cmd, gpu, {.backend = backend, .profile = true});
    CHECK(exe.stats().conditionals == 2);
    CHECK(exe.stats().conditional_graphs == (backend == Backend::streams ? 2 : 0));
    Queue q(gpu);
    poison(counters);
    exe.launch(q).wait();
    CHECK(read_ints(counters) == std::vector<int>{5, 11, 22});
    const Profile p = exe.last_profile();
    REQUIRE(p.commands.size() == 3);
    CHECK(p.commands[1].kind == CommandKind::if_else);
    CHECK(p.commands[2].kind == CommandKind::switch_on);
    for (int c = 1; c < 3; ++c) {
      CHECK(p.commands[c].start_ms >= p.commands[0].end_ms);  // after "five"
      CHECK(p.commands[c].duration_ms() > 0);
    }
    const std::string trace = p.trace_json();
    CHECK(trace.find(R"("cat":"if_else")") != std::string::npos);
    CHECK(trace.find(R"("cat":"switch_on")") != std::string::npos);
  }
}

TEST_CASE("cuda.conditional.errors_name_the_command" * doctest::timeout(60)) {
  const Device gpu = Device::cuda(0);
  Buffer<int> counters(gpu, 2);
  int* c = counters.data();
  SUBCASE("a host task in an else branch") {
    CommandBuffer then_body("then"), else_body("else");
    then_body.parallel_for(1, Increment{c, 0});
    else_body.host([] {}).named("on the host");
    CommandBuffer cmd("if");
    cmd.if_else(Even{c, 0}, then_body, else_body);
    refused_on_every_cuda_backend(cmd, gpu, "else/on the host");
  }
  SUBCASE("an event record in a case") {
    Event done(gpu);
    CommandBuffer a("a"), b("b");
    a.parallel_for(1, Increment{c, 0});
    b.record(done).named("records");
    CommandBuffer cmd("switch");
    cmd.switch_on(Fixed{0}, {a, b});
    refused_on_every_cuda_backend(cmd, gpu, "b/records");
  }
  SUBCASE("a switch inside an executed buffer") {
    CommandBuffer a("a");
    a.parallel_for(1, Increment{c, 0});
    CommandBuffer inner("inner");
    inner.switch_on(Fixed{0}, {a}).named("inner switch");
    CommandBuffer cmd("outer");
    cmd.execute(inner);
    refused_on_every_cuda_backend(cmd, gpu, "inner/inner switch");
  }
}

TEST_CASE("cuda.conditional.oracle_on_every_backend" * doctest::timeout(600)) {
  // Random DAGs whose vertices take their tickets inside if_else branches, switch cases and
  // loops of switches; the branches follow the live ticket count on the device. Each DAG runs
  // on both CUDA backends and, from the same recording, on the host; every backend must honour
  // every edge and give every vertex its tickets.
  std::mt19937 rng(15);
  std::uniform_real_distribution<double> exponent(0.0, 3.0);
  const DagShape shapes[] = {DagShape::chain, DagShape::fan, DagShape::layered, DagShape::random,
                             DagShape::shuffled};
  constexpr std::uint32_t launches = 3;
  for (std::uint32_t i = 0; i < 40; ++i) {
    const auto n = static_cast<std::size_t>(std::pow(10.0, exponent(rng)));
    const Dag dag = random_dag(shapes[i % 5], n, 15000 + i);
    CAPTURE(dag.describe());
    for (Backend backend : cuda_backends) {  // subcases would run the first DAG only
      CAPTURE(to_string(backend));
      const Device gpu = Device::cuda(0);
      DeviceBoard board(gpu, dag.size * launches);
      Buffer<std::uint32_t> checks(gpu, dag.size);
      TEST_CUDA(cudaMemset(checks.data(), 0, dag.size * sizeof(std::uint32_t)));
      TEST_CUDA(cudaDeviceSynchronize());
      CommandBuffer cmd("conditional oracle");
      const auto elements = record_conditional_dag(cmd, dag, [&](std::uint32_t per) {
        return board.board(static_cast<std::uint32_t>(dag.size), per, launches);
      }, checks.data());
      Executable exe = compile(cmd, gpu, {.backend = backend, .max_streams = 1 + i % 6});
      REQUIRE(exe.backend() == backend);
      Queue q(gpu);
      for (std::uint32_t k = 0; k < launches; ++k) exe.launch(q);
      q.wait();
      const std::string verdict = check_order(dag, board.read(), launches, elements);
      CHECK_MESSAGE(verdict.empty(), to_string(backend) << ": " << verdict);
    }
    // The host runs the same kind of recording, over host memory.
    const std::string verdict = run_conditional_dag_on_host(dag, launches);
    CHECK_MESSAGE(verdict.empty(), "host: " << verdict);
  }
}
