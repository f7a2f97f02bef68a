// loop_while and if_then on a GPU, on both CUDA backends (the graph backend's conditional
// WHILE and IF nodes; the streams backend's graph of its own per loop or if, launched on its
// stream): counts exactly as the host backend's, nested loops and ifs, updates, profile mode
// around a loop, and the clear errors for what a loop body on CUDA cannot hold.
#include "cuda/kernels.cuh"
#include "support/expect_error.hpp"
#include "support/loop_shapes.hpp"

#include <doctest/doctest.h>

#include <utility>
#include <vector>

using namespace cmdgraph;
using namespace cmdgraph::testing;

TEST_CASE("cuda.loop.counts_while_the_condition_holds" * doctest::timeout(60)) {
  const Device gpu = Device::cuda(0);
  for (Backend backend : {Backend::automatic, Backend::cuda_graph, Backend::streams}) {
    CAPTURE(to_string(backend));
    for (int limit : {0, 1, 7, 1000}) {
      CAPTURE(limit);
      Buffer<int> counters(gpu, 2);
      poison(counters);
      CommandBuffer body("body");
      CommandBuffer cmd = counting_loop(counters, limit, body);
      Executable exe = compile(cmd, gpu, {.backend = backend});
      const Backend expected = backend == Backend::streams ? Backend::streams : Backend::cuda_graph;
      CHECK(exe.backend() == expected);
      CHECK(exe.stats().conditionals == 1);
      CHECK(exe.stats().conditional_graphs == (backend == Backend::streams ? 1 : 0));
      Queue q(gpu);
      for (int launch = 0; launch < 3; ++launch) {
        exe.launch(q).wait();
        CHECK(read_ints(counters) == std::vector<int>{limit, limit});
      }
    }
  }
}

TEST_CASE("cuda.loop.nested_loops_and_a_multi_command_body" * doctest::timeout(60)) {
  // The host backend's test, on the GPU: 5 outer passes of 3 inner passes.
  const Device gpu = Device::cuda(0);
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    Buffer<int> counters(gpu, 3);
    poison(counters);
    CommandBuffer inner_body("inner body"), outer_body("outer body");
    CommandBuffer cmd = nested_loops(counters.data(), inner_body, outer_body);
    Queue q(gpu);
    compile(cmd, gpu, {.backend = backend}).launch(q).wait();
    CHECK(read_ints(counters) == std::vector<int>{5, 3, 15});
  }
}

TEST_CASE("cuda.loop.update_from_a_rerecorded_buffer" * doctest::timeout(60)) {
  // The re-recorded loop counts to another limit (its condition's value): in place, the next
  // launch must count to the new one.
  const Device gpu = Device::cuda(0);
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    Buffer<int> counters(gpu, 2);
    poison(counters);
    CommandBuffer body("body");
    CommandBuffer cmd = counting_loop(counters, 5, body);
    Executable exe = compile(cmd, gpu, {.backend = backend});
    Queue q(gpu);
    exe.launch(q).wait();
    CHECK(read_ints(counters) == std::vector<int>{5, 5});
    CommandBuffer body_again("body");
    CommandBuffer again = counting_loop(counters, 9, body_again);
    const UpdateResult result = exe.update(again);
    CHECK_FALSE(result.reinstantiated);
    poison(counters);
    exe.launch(q).wait();
    CHECK(read_ints(counters) == std::vector<int>{9, 9});
  }
}

TEST_CASE("cuda.loop.profiled_as_one_command" * doctest::timeout(60)) {
  const Device gpu = Device::cuda(0);
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    Buffer<int> counters(gpu, 2);
    CommandBuffer body("body");
    CommandBuffer cmd = counting_loop(counters, 50, body);
    Executable exe = compile(cmd, gpu, {.backend = backend, .profile = true});
    Queue q(gpu);
    exe.launch(q).wait();
    CHECK(read_ints(counters) == std::vector<int>{50, 50});
    const Profile p = exe.last_profile();
    REQUIRE(p.commands.size() == 3);  // reset, count, after: the body's passes are the loop's
    CHECK(p.commands[1].name == "count");
    CHECK(p.commands[1].kind == CommandKind::loop);
    CHECK(p.commands[1].start_ms >= p.commands[0].end_ms);
    CHECK(p.commands[2].start_ms >= p.commands[1].end_ms);
    CHECK(p.commands[1].duration_ms() > 0);
  }
}

TEST_CASE("cuda.loop.errors_name_the_command" * doctest::timeout(60)) {
  const Device gpu = Device::cuda(0);
  Buffer<int> counters(gpu, 2);
  int* c = counters.data();
  SUBCASE("a host task in a loop body, on every CUDA backend") {
    CommandBuffer body("body");
    body.host([] {}).named("on the host");
    CommandBuffer cmd("loop");
    cmd.loop_while(body, Below{c, 0, 1});
    refused_on_every_cuda_backend(cmd, gpu, "body/on the host");
  }
  SUBCASE("an event wait in a loop body") {
    Event ready(gpu);
    CommandBuffer body("body");
    body.wait(ready).named("waits");
    CommandBuffer cmd("loop");
    cmd.loop_while(body, Below{c, 0, 1});
    refused_on_every_cuda_backend(cmd, gpu, "body/waits");
  }
  SUBCASE("a loop inside an executed buffer") {
    CommandBuffer body("body");
    body.parallel_for(1, Increment{c, 0});
    CommandBuffer inner("inner");
    inner.loop_while(body, Below{c, 0, 1}).named("inner loop");
    CommandBuffer cmd("outer");
    cmd.execute(inner);
    refused_on_every_cuda_backend(cmd, gpu, "inner/inner loop");
  }
}

TEST_CASE("cuda.if.runs_its_body_once_or_not" * doctest::timeout(60)) {
  // A conditional IF node decided on the device, as the host backend decides on the host.
  const Device gpu = Device::cuda(0);
  for (Backend backend : {Backend::automatic, Backend::streams}) {
    CAPTURE(to_string(backend));
    for (const auto& [value, expected] : {std::pair{3, 11}, std::pair{5, 10}, std::pair{9, 10}}) {
      CAPTURE(value);
      Buffer<int> counters(gpu, 2);
      poison(counters);
      CommandBuffer then_body("then");
      CommandBuffer cmd = one_if(counters.data(), value, 5, then_body);
      Executable exe = compile(cmd, gpu, {.backend = backend});
      const Backend runs_on = backend == Backend::streams ? Backend::streams : Backend::cuda_graph;
      CHECK(exe.backend() == runs_on);
      Queue q(gpu);
      for (int launch = 0; launch < 3; ++launch) {
        exe.launch(q).wait();
        CHECK(read_ints(counters)[1] == expected);
      }
    }
  }
}

TEST_CASE("cuda.if.a_loop_inside_an_if_inside_a_loop" * doctest::timeout(60)) {
  const Device gpu = Device::cuda(0);
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    Buffer<int> counters(gpu, 3);
    poison(counters);
    CommandBuffer inner_body("inner body"), then_body("then"), outer_body("outer body");
    CommandBuffer cmd = loop_if_loop(counters.data(), inner_body, then_body, outer_body);
    Queue q(gpu);
    Executable exe = compile(cmd, gpu, {.backend = backend});
    for (int launch = 0; launch < 2; ++launch) {
      poison(counters);
      exe.launch(q).wait();
      CHECK(read_ints(counters) == std::vector<int>{4, 3, 6});
    }
  }
}
