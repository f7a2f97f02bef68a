// Devices, memory owners, queues and fences on the host device.
#include "support/expect_error.hpp"

#include <cmdgraph/cmdgraph.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <thread>

using namespace cmdgraph;
using namespace std::chrono_literals;

TEST_CASE("run.device.host_and_best" * doctest::timeout(10)) {
  const Device h = Device::host();
  CHECK(h.is_host());
  CHECK(h.ordinal() == -1);
  CHECK(h.name() == "host");
  CHECK(h.properties().multiprocessors >= 2);
  CHECK(Device::count() >= 0);
  CHECK((Device::count() > 0) == Device::best().is_cuda());
  auto e = CMDGRAPH_EXPECT_ERROR(Device::cuda(Device::count()), errc::no_device);
  REQUIRE(e);
}

TEST_CASE("run.memory.host_owners" * doctest::timeout(10)) {
  Buffer<double> b(Device::host(), 1000);
  CHECK(b.size() == 1000);
  CHECK(b.space() == MemorySpace::host);
  CHECK(reinterpret_cast<std::uintptr_t>(b.data()) % 64 == 0);
  HostBuffer<int> h(10);
  CHECK(h.view().host_accessible());
  for (int i = 0; i < 10; ++i) h[i] = i;
  HostBuffer<int> moved = std::move(h);
  CHECK(h.data() == nullptr);
  CHECK(moved[9] == 9);
  View<const int> cv = moved;  // const views from owners
  CHECK(cv.size() == 10);
  CHECK(moved.subview(2, 3).data() == moved.data() + 2);
}

TEST_CASE("run.fence.default_is_signalled" * doctest::timeout(10)) {
  Fence f;
  CHECK(f.ready());
  f.wait();
  CHECK(f.wait_for(0ms));
}

TEST_CASE("run.queue.orders_executables" * doctest::timeout(30)) {
  std::vector<int> log;
  CommandBuffer a("a"), b("b");
  a.host([&] {
    std::this_thread::sleep_for(2ms);
    log.push_back(1);
  });
  b.host([&] { log.push_back(2); });
  Executable ea = compile(a, Device::host()), eb = compile(b, Device::host());
  Queue q(Device::host());
  for (int i = 0; i < 5; ++i) {
    ea.launch(q);
    eb.launch(q);
  }
  q.wait();
  CHECK(log == std::vector<int>{1, 2, 1, 2, 1, 2, 1, 2, 1, 2});
}

TEST_CASE("run.queue.destructor_waits" * doctest::timeout(30)) {
  std::atomic<int> runs{0};
  CommandBuffer cmd("slow");
  cmd.host([&] {
    std::this_thread::sleep_for(1ms);
    ++runs;
  });
  Executable exe = compile(cmd, Device::host());
  {
    Queue q(Device::host());
    for (int i = 0; i < 20; ++i) exe.launch(q);
  }
  CHECK(runs == 20);
}

TEST_CASE("run.queue.device_mismatch" * doctest::timeout(10)) {
  if (Device::count() == 0) return;  // needs a CUDA device to mismatch with
  CommandBuffer cmd("m");
  cmd.host([] {});
  Executable exe = compile(cmd, Device::host());
  Queue gpu(Device::cuda(0));
  CMDGRAPH_EXPECT_ERROR(exe.launch(gpu), errc::device_mismatch);
}

TEST_CASE("run.device_launch.needs_a_cuda_graph" * doctest::timeout(10)) {
  CommandBuffer cmd("child");
  cmd.host([] {}).named("step");
  auto e = CMDGRAPH_EXPECT_ERROR(compile(cmd, Device::host(), {.device_launch = true}),
                                 errc::unsupported);
  REQUIRE(e);
  CHECK(std::string(e->what()).find("'child' is compiled for device launch") !=
        std::string::npos);
  CHECK(std::string(e->what()).find("needs a CUDA device") != std::string::npos);
  // An executable not compiled for device launch has no device handle, on every backend.
  CommandBuffer plain("plain");
  plain.host([] {});
  Executable exe = compile(plain, Device::host());
  Queue q(Device::host());
  auto w = CMDGRAPH_EXPECT_ERROR(exe.device_executable(q), errc::wrong_state);
  REQUIRE(w);
  CHECK(std::string(w->what()).find("'plain' was not compiled for device launch") !=
        std::string::npos);
}
