// Semantics every backend shares (issue 20), on both CUDA backends: a failed host task skips
// its dependant host tasks while GPU work still runs; an event wait sees the record submitted
// before it across queues; semaphores outlive their handles while the GPU uses them;
// profiles name and count commands of executed buffers alike.
#include "cuda/kernels.cuh"
#include "support/expect_error.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <memory>
#include <stdexcept>
#include <vector>

using namespace cmdgraph;
using namespace cmdgraph::testing;

namespace {
// About `ms` milliseconds of one thread spinning (the H200 runs near 2 GHz).
constexpr long long cycles_for_ms(int ms) { return 2'000'000LL * ms; }
}  // namespace

TEST_CASE("reliability.cuda_host_failure_skips_dependants" * doctest::timeout(60)) {
  const Device gpu = Device::cuda(0);
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    std::atomic<int> dependant{0}, independent{0};
    Buffer<int> d(gpu, 1);
    HostBuffer<int> h(1);
    CommandBuffer cmd("fails");
    auto bad = cmd.host([] { throw std::runtime_error("boom"); }).named("bad");
    auto set = cmd.launch(&set_kernel, LaunchConfig{{1}, {1}}, 1, 7, d.data()).after(bad);
    auto down = cmd.copy(h, d, 1).after(set);
    cmd.host([&] { ++dependant; }).after(down).named("dependant");
    cmd.host([&] { ++independent; }).named("independent");
    Executable exe = compile(cmd, gpu, {.backend = backend});
    Queue q(gpu);
    for (int launch = 1; launch <= 2; ++launch) {
      h[0] = -1;  // poison
      auto e = CMDGRAPH_EXPECT_ERROR(exe.launch(q).wait(), errc::host_task_failed);
      REQUIRE(e);
      CHECK(e->commands() == std::vector<std::string>{"bad"});
      CHECK(dependant == 0);              // skipped: it follows the failed task
      CHECK(independent == launch);       // runs: it does not
      CHECK(h[0] == 7);                   // GPU work still runs; the launch's results are void
    }
  }
}

TEST_CASE("reliability.cuda_event_wait_sees_the_record_submitted_before_it" * doctest::timeout(60)) {
  const Device gpu = Device::cuda(0);
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    Event ready(gpu);
    Buffer<int> d(gpu, 1);
    HostBuffer<int> h(1);
    CommandBuffer producer("producer");
    auto spin = producer.launch(&busy, LaunchConfig{{1}, {1}}, cycles_for_ms(20));
    auto set = producer.launch(&set_kernel, LaunchConfig{{1}, {1}}, 1, 42, d.data()).after(spin);
    producer.record(ready).after(set);
    CommandBuffer consumer("consumer");
    auto wait = consumer.wait(ready);
    consumer.copy(h, d, 1).after(wait);
    Executable a = compile(producer, gpu, {.backend = backend});
    Executable b = compile(consumer, gpu, {.backend = backend});
    Queue qa(gpu), qb(gpu);
    for (int round = 0; round < 3; ++round) {
      TEST_CUDA(cudaMemset(d.data(), 0, sizeof(int)));
      TEST_CUDA(cudaDeviceSynchronize());
      h[0] = -1;
      a.launch(qa);
      b.launch(qb).wait();
      CHECK(h[0] == 42);
      qa.wait();
    }
  }
}

TEST_CASE("reliability.cuda_semaphore_outlives_its_handle" * doctest::timeout(60)) {
  const Device gpu = Device::cuda(0);
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    Buffer<int> d(gpu, 1);
    HostBuffer<int> h(1);
    h[0] = -1;
    CommandBuffer cmd("gated");
    auto set = cmd.launch(&set_kernel, LaunchConfig{{1}, {1}}, 1, 5, d.data());
    cmd.copy(h, d, 1).after(set);
    Executable exe = compile(cmd, gpu, {.backend = backend});
    Queue q(gpu);
    std::vector<TimelineSemaphore> s;
    s.emplace_back(0);
    q.submit(exe, {.wait = {{s[0], 1}}, .signal = {{s[0], 2}}});  // the GPU waits for 1
    for (int i = 0; i < 64; ++i) s.emplace_back(0);               // moves s[0]
    s[0].signal(1);
    q.wait();
    CHECK(s[0].value() == 2);
    CHECK(h[0] == 5);
    {
      TimelineSemaphore gone(0);
      CommandBuffer slow("slow");
      slow.launch(&busy, LaunchConfig{{1}, {1}}, cycles_for_ms(20));
      Executable e2 = compile(slow, gpu, {.backend = backend});
      q.submit(e2, {.signal = {{gone, 1}}});
    }  // the GPU writes the value after the handle is gone: its memory must still be there
    q.wait();
  }
}

TEST_CASE("reliability.cuda_profiles_name_executed_commands_alike" * doctest::timeout(60)) {
  // Every backend reports the same commands under the same names: an executed buffer's command
  // itself (its span), and its commands as "buffer/name".
  const Device gpu = Device::cuda(0);
  Buffer<int> d(gpu, 1);
  auto names_on = [&](Backend backend) {
    CommandBuffer inner("inner");
    inner.launch(&set_kernel, LaunchConfig{{1}, {1}}, 1, 1, d.data()).named("set");
    CommandBuffer outer("outer");
    auto run = outer.execute(inner).named("step");
    outer.launch(&set_kernel, LaunchConfig{{1}, {1}}, 1, 2, d.data()).named("after").after(run);
    Executable exe = compile(outer, gpu, {.backend = backend, .profile = true});
    Queue q(gpu);
    exe.launch(q).wait();
    std::vector<std::string> names;
    for (const CommandTiming& c : exe.last_profile().commands) names.push_back(c.name);
    return names;
  };
  const std::vector<std::string> expected{"step", "after", "inner/set"};
  CHECK(names_on(Backend::cuda_graph) == expected);
  CHECK(names_on(Backend::streams) == expected);
}
