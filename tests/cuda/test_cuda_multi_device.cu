// Work across two GPUs: both CUDA backends on the second device (nothing assumes device 0),
// copies between devices, one device waiting for another's event (from its queue or from
// inside its command buffer) or semaphore, and the clear errors for what one executable cannot
// do across devices. Skipped (exit 77) when
// fewer than two CUDA devices are visible.
#include "cuda/oracle.cuh"
#include "support/expect_error.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>

using namespace cmdgraph;
using namespace cmdgraph::testing;

namespace {

// Fills `count` ints of `p` on device `d` with `value` bytes and waits for it.
void poison(Device d, void* p, std::size_t count, int value = 0xFF) {
  const OnDevice on(d);
  TEST_CUDA(cudaMemset(p, value, count * sizeof(int)));
  TEST_CUDA(cudaDeviceSynchronize());
}

// About 2 ms of one block's time on an H200 (1.98 GHz), then *out = value.
Executable slow_producer(Device gpu, int* out, int value) {
  CommandBuffer cmd("slow producer");
  auto wait = cmd.launch(&busy, LaunchConfig{{1}, {32}}, 4'000'000ll).named("busy");
  cmd.launch(&set_kernel, LaunchConfig{{1}, {1}}, 1, value, out).after(wait).named("produce");
  return compile(cmd, gpu);
}

}  // namespace

TEST_CASE("cuda.multi_device.oracle_on_the_second_device" * doctest::timeout(300)) {
  const Device second = Device::cuda(1);
  const DagShape shapes[] = {DagShape::chain, DagShape::fan, DagShape::layered, DagShape::random,
                             DagShape::shuffled};
  for (std::uint32_t i = 0; i < 20; ++i) {
    const Dag dag = random_dag(shapes[i % 5], 1 + 157 * i, 7000 + i);
    CAPTURE(dag.describe());
    CHECK(run_on_gpu(dag, Backend::cuda_graph, 4, 2, nullptr, false, second).empty());
    CHECK(run_on_gpu(dag, Backend::streams, 1 + i % 6, 2, nullptr, false, second).empty());
  }
}

TEST_CASE("cuda.multi_device.peer_copies" * doctest::timeout(120)) {
  const Device gpu0 = Device::cuda(0), gpu1 = Device::cuda(1);
  const std::size_t n = std::size_t{1} << 20;
  HostBuffer<int> in(n), out(n);
  std::iota(in.begin(), in.end(), 0);
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    for (Device runs_on : {gpu0, gpu1}) {  // copies issued by either end
      const std::string device_name = runs_on.name();
      CAPTURE(device_name);
      Buffer<int> a(gpu0, n), b(gpu1, n), c(gpu0, n), b2(gpu1, n);
      for (auto* buffer : {&a, &c}) poison(gpu0, buffer->data(), n);
      for (auto* buffer : {&b, &b2}) poison(gpu1, buffer->data(), n);
      std::fill(out.begin(), out.end(), -7);

      // in -> a (cuda:0) -> b (cuda:1) -> c (cuda:0) -> out
      CommandBuffer cmd("round trip");
      auto up = cmd.copy(a, in, n).named("upload");
      auto across = cmd.copy(b, a, n).after(up).named("across");
      auto back = cmd.copy(c, b, n).after(across).named("back");
      cmd.copy(out, c, n).after(back).named("download");
      Executable exe = compile(cmd, runs_on, {.backend = backend});
      Queue q(runs_on);
      exe.launch(q).wait();
      CHECK(std::equal(in.begin(), in.end(), out.begin()));

      // The peer copies take new ends in place: through b2 instead of b.
      std::fill(out.begin(), out.end(), -7);
      exe.update(across, b2, a, n);
      exe.update(back, c, b2, n);
      poison(gpu0, c.data(), n);
      exe.launch(q).wait();
      CHECK(std::equal(in.begin(), in.end(), out.begin()));
      std::vector<int> through(n, -7);
      TEST_CUDA(cudaMemcpy(through.data(), b2.data(), n * sizeof(int), cudaMemcpyDeviceToHost));
      CHECK(std::equal(in.begin(), in.end(), through.begin()));
    }
  }
}

TEST_CASE("cuda.multi_device.waits_for_another_device" * doctest::timeout(120)) {
  // cuda:0 spends ~2 ms before it writes 42; cuda:1 then copies the value over. Without the
  // wait, cuda:1 would copy the poison.
  const Device gpu0 = Device::cuda(0), gpu1 = Device::cuda(1);
  Buffer<int> value(gpu0, 1), mine(gpu1, 1);
  HostBuffer<int> out(1);
  Executable produce = slow_producer(gpu0, value.data(), 42);
  CommandBuffer fetch("fetch");
  auto across = fetch.copy(mine, value, 1).named("across");
  fetch.copy(out, mine, 1).after(across).named("download");
  Queue q0(gpu0), q1(gpu1);
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    Executable consume = compile(fetch, gpu1, {.backend = backend});
    {  // through an event
      poison(gpu0, value.data(), 1);
      out[0] = -7;
      Event done(gpu0);
      produce.launch(q0);
      q0.record(done);
      q1.wait(done);
      consume.launch(q1).wait();
      CHECK(out[0] == 42);
    }
    {  // through a wait for the event recorded in the consumer's own command buffer
      poison(gpu0, value.data(), 1);
      out[0] = -7;
      Event done(gpu0);
      CommandBuffer waiting("fetch when cuda:0 is done");
      auto ready = waiting.wait(done).named("wait for cuda:0");
      auto fetched = waiting.copy(mine, value, 1).after(ready).named("across");
      waiting.copy(out, mine, 1).after(fetched).named("download");
      Executable consume_after = compile(waiting, gpu1, {.backend = backend});
      produce.launch(q0);
      q0.record(done);
      consume_after.launch(q1).wait();
      CHECK(out[0] == 42);
    }
    {  // through a timeline semaphore
      poison(gpu0, value.data(), 1);
      out[0] = -7;
      TimelineSemaphore ready(0);
      Fence consumed = q1.submit(consume, {.wait = {{ready, 1}}});
      q0.submit(produce, {.signal = {{ready, 1}}});
      consumed.wait();
      CHECK(out[0] == 42);
      CHECK(ready.value() == 1);
    }
  }
}

TEST_CASE("cuda.multi_device.errors_name_the_command" * doctest::timeout(60)) {
  const Device gpu0 = Device::cuda(0), gpu1 = Device::cuda(1);
  Buffer<int> remote(gpu1, 4);
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    {  // a fill of another device's memory
      CommandBuffer cmd("fill elsewhere");
      cmd.fill(remote, 0, 4).named("remote fill");
      auto e = CMDGRAPH_EXPECT_ERROR(compile(cmd, gpu0, {.backend = backend}),
                                     errc::device_mismatch);
      REQUIRE(e);
      CHECK(e->commands() == std::vector<std::string>{"remote fill"});
      CHECK(mentions(*e, "cuda:1"));
    }
    {  // an update that moves a fill to another device
      Buffer<int> local(gpu0, 4);
      CommandBuffer cmd("fill here");
      auto fill = cmd.fill(local, 0, 4).named("local fill");
      Executable exe = compile(cmd, gpu0, {.backend = backend});
      auto e = CMDGRAPH_EXPECT_ERROR(exe.update(fill, remote, 1, 4), errc::device_mismatch);
      REQUIRE(e);
      CHECK(e->commands() == std::vector<std::string>{"local fill"});
    }
    {  // recording another device's event
      Event elsewhere(gpu1);
      CommandBuffer cmd("record elsewhere");
      cmd.record(elsewhere).named("foreign record");
      auto e = CMDGRAPH_EXPECT_ERROR(compile(cmd, gpu0, {.backend = backend}),
                                     errc::device_mismatch);
      REQUIRE(e);
      CHECK(e->commands() == std::vector<std::string>{"foreign record"});
    }
    {  // a launch on another device's queue
      CommandBuffer cmd("here");
      cmd.fill(remote, 0, 4);
      Executable exe = compile(cmd, gpu1, {.backend = backend});
      Queue q0(gpu0);
      auto e = CMDGRAPH_EXPECT_ERROR(exe.launch(q0), errc::device_mismatch);
      REQUIRE(e);
      CHECK(mentions(*e, "here"));
    }
  }
}
