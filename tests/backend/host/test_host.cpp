// The host backend: every command kind, failure handling, nesting, events, re-launch.
#include "support/expect_error.hpp"

#include <cmdgraph/cmdgraph.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <numeric>
#include <stdexcept>
#include <thread>

using namespace cmdgraph;
using namespace std::chrono_literals;

namespace {

struct Scale {
  const float* in;
  float* out;
  float factor;
  void operator()(std::size_t i) const { out[i] = in[i] * factor; }
};

// Blocks the host task that runs it until released; lets tests hold work in flight.
struct Gate {
  std::atomic<bool> open{false};
  void wait() const {
    while (!open.load()) std::this_thread::sleep_for(100us);
  }
};

}  // namespace

TEST_CASE("host.pipeline.fill_parallel_for_copy" * doctest::timeout(30)) {
  const std::size_t n = 100000;
  Buffer<float> in(Device::host(), n), tmp(Device::host(), n);
  HostBuffer<float> out(n);
  std::fill(out.begin(), out.end(), -7.0f);  // poison
  CommandBuffer cmd("step");
  auto load = cmd.fill(in, 1.5f, n).named("load");
  auto prep = cmd.parallel_for(n, Scale{in.data(), tmp.data(), 2.0f}).after(load).named("prep");
  cmd.copy(out, tmp, n).after(prep).named("save");
  Executable exe = compile(cmd, Device::host());
  CHECK(exe.backend() == Backend::host);
  CHECK(exe.stats().backend_reason == "host device");
  Queue queue(Device::host());
  for (int i = 0; i < 100; ++i) exe.launch(queue);
  queue.wait();
  CHECK(std::all_of(out.begin(), out.end(), [](float v) { return v == 3.0f; }));
}

TEST_CASE("host.fill.every_width" * doctest::timeout(10)) {
  std::vector<std::uint8_t> b(9, 0xEE);
  std::vector<std::uint16_t> h(9, 0xEEEE);
  std::vector<float> f(9, -1.0f);
  CommandBuffer cmd("fills");
  cmd.fill(host_view(b.data(), 9), 0x5A, 8);
  cmd.fill(host_view(h.data(), 9), 0x1234, 8);
  cmd.fill(host_view(f.data(), 9), 0.25f, 8);
  Queue q(Device::host());
  compile(cmd, Device::host()).launch(q).wait();
  for (int i = 0; i < 8; ++i) {
    CHECK(b[i] == 0x5A);
    CHECK(h[i] == 0x1234);
    CHECK(f[i] == 0.25f);
  }
  CHECK(b[8] == 0xEE);  // nothing past the count
  CHECK(h[8] == 0xEEEE);
  CHECK(f[8] == -1.0f);
}

TEST_CASE("host.task_throws.dependants_skipped_others_run" * doctest::timeout(30)) {
  std::atomic<int> dependant_ran{0}, independent_ran{0};
  CommandBuffer cmd("failing");
  auto bad = cmd.host([] { throw std::runtime_error("disk on fire"); }).named("load");
  auto child = cmd.host([&] { ++dependant_ran; }).after(bad);
  cmd.host([&] { ++dependant_ran; }).after(child);  // transitively skipped
  cmd.host([&] { ++independent_ran; });
  Executable exe = compile(cmd, Device::host());
  Queue q(Device::host());
  Fence f = exe.launch(q);
  auto e = CMDGRAPH_EXPECT_ERROR(f.wait(), errc::host_task_failed);
  REQUIRE(e);
  CHECK(e->commands() == std::vector<std::string>{"load"});
  CHECK(cmdgraph::testing::mentions(*e, "disk on fire"));
  try {
    f.wait();  // the same error again, with the original exception nested inside
  } catch (const Error& again) {
    try {
      std::rethrow_if_nested(again);
      FAIL("the original exception should be nested");
    } catch (const std::runtime_error& original) {
      CHECK(std::string(original.what()) == "disk on fire");
    }
  }
  CHECK(dependant_ran == 0);
  CHECK(independent_ran == 1);
  // The queue reports it too, once, and the executable runs again afterwards.
  CMDGRAPH_EXPECT_ERROR(q.wait(), errc::host_task_failed);
  q.wait();
  CMDGRAPH_EXPECT_ERROR(exe.launch(q).wait(), errc::host_task_failed);
  CHECK(independent_ran == 2);
}

TEST_CASE("host.parallel_for.throwing_functor" * doctest::timeout(30)) {
  struct Boom {
    void operator()(std::size_t i) const {
      if (i == 5000) throw std::out_of_range("index 5000");
    }
  };
  std::atomic<int> after{0};
  CommandBuffer cmd("pf");
  auto p = cmd.parallel_for(10000, Boom{}).named("boom");
  cmd.host([&] { ++after; }).after(p);
  Queue q(Device::host());
  auto e = CMDGRAPH_EXPECT_ERROR(compile(cmd, Device::host()).launch(q).wait(),
                                 errc::host_task_failed);
  REQUIRE(e);
  CHECK(e->commands() == std::vector<std::string>{"boom"});
  CHECK(after == 0);
  CMDGRAPH_EXPECT_ERROR(q.wait_for(1s), errc::host_task_failed);
}

TEST_CASE("host.relaunch.serialized_never_overlapping" * doctest::timeout(60)) {
  std::atomic<int> inside{0}, overlaps{0}, runs{0};
  CommandBuffer cmd("serial");
  auto a = cmd.host([&] {
    if (inside++ != 0) ++overlaps;
  });
  auto b = cmd.parallel_for(5000, [](std::size_t) {}).after(a);
  cmd.host([&] {
    ++runs;
    --inside;
  }).after(b);
  Executable exe = compile(cmd, Device::host());
  Queue q1(Device::host()), q2(Device::host());
  // 1,000 back-to-back launches, alternating queues: still one at a time.
  for (int i = 0; i < 1000; ++i) exe.launch(i % 2 ? q1 : q2);
  q1.wait();
  q2.wait();
  CHECK(runs == 1000);
  CHECK(overlaps == 0);
}

TEST_CASE("host.relaunch.two_threads_one_executable" * doctest::timeout(60)) {
  std::atomic<int> inside{0}, overlaps{0}, runs{0};
  CommandBuffer cmd("shared");
  cmd.host([&] {
    if (inside++ != 0) ++overlaps;
    std::this_thread::sleep_for(10us);
    --inside;
    ++runs;
  });
  Executable exe = compile(cmd, Device::host());
  Queue q(Device::host());
  auto submit = [&] {
    for (int i = 0; i < 200; ++i) exe.launch(q);
  };
  std::thread t1(submit), t2(submit);
  t1.join();
  t2.join();
  q.wait();
  CHECK(runs == 400);
  CHECK(overlaps == 0);
}

TEST_CASE("host.clone.runs_concurrently" * doctest::timeout(30)) {
  std::atomic<int> inside{0}, most{0};
  Gate gate;
  CommandBuffer cmd("clone");
  cmd.host([&] {
    const int now = ++inside;
    int seen = most.load();
    while (now > seen && !most.compare_exchange_weak(seen, now)) {
    }
    gate.wait();
    --inside;
  });
  Executable a = compile(cmd, Device::host());
  Executable b = a.clone();
  Queue q1(Device::host()), q2(Device::host());
  a.launch(q1);
  b.launch(q2);
  while (most.load() < 2) std::this_thread::sleep_for(100us);  // both inside at once
  gate.open = true;
  q1.wait();
  q2.wait();
  CHECK(most == 2);
}

TEST_CASE("host.launch.returns_before_work_runs" * doctest::timeout(30)) {
  Gate gate;
  std::atomic<bool> done{false};
  CommandBuffer cmd("async");
  cmd.host([&] {
    gate.wait();
    done = true;
  });
  Executable exe = compile(cmd, Device::host());
  Queue q(Device::host());
  Fence f = exe.launch(q);
  CHECK_FALSE(f.ready());
  CHECK_FALSE(f.wait_for(5ms));
  CHECK_FALSE(q.wait_for(5ms));
  CHECK_FALSE(done.load());
  gate.open = true;
  f.wait();
  CHECK(f.ready());
  CHECK(done.load());
}

TEST_CASE("host.nested.execute_runs_inside_its_edges" * doctest::timeout(30)) {
  std::vector<int> log;
  std::mutex m;
  auto note = [&](int v) {
    return [&, v] {
      std::lock_guard lock(m);
      log.push_back(v);
    };
  };
  CommandBuffer inner("inner");
  auto i1 = inner.host(note(1));
  inner.host(note(2)).after(i1);
  CommandBuffer outer("outer");
  auto first = outer.host(note(0));
  auto nested = outer.execute(inner).after(first);
  auto again = outer.execute(inner).after(nested);  // the same secondary twice
  outer.host(note(9)).after(again);
  Queue q(Device::host());
  compile(outer, Device::host()).launch(q).wait();
  CHECK(log == std::vector<int>{0, 1, 2, 1, 2, 9});
}

TEST_CASE("host.events.record_then_wait" * doctest::timeout(30)) {
  Event ev(Device::host());
  std::atomic<int> stage{0}, seen{-1};
  CommandBuffer cmd("events");
  auto work = cmd.host([&] { stage = 1; });
  auto rec = cmd.record(ev).after(work);
  auto w = cmd.wait(ev).after(rec);
  cmd.host([&] {
    seen = stage.load();
    stage = 2;
  }).after(w);
  Queue q(Device::host());
  compile(cmd, Device::host()).launch(q).wait();
  CHECK(seen == 1);
  CHECK(stage == 2);
}

TEST_CASE("host.executable.outlives_command_buffer" * doctest::timeout(30)) {
  int runs = 0;
  Executable exe;
  {
    CommandBuffer cmd("temporary");
    cmd.host([&] { ++runs; });
    exe = compile(cmd, Device::host());
  }
  Queue q(Device::host());
  exe.launch(q);
  exe.launch(q).wait();
  CHECK(runs == 2);
  CHECK(exe.name() == "temporary");
}

TEST_CASE("host.executable.destroyed_while_in_flight" * doctest::timeout(30)) {
  // Destroying an executable waits for its launches, as the CUDA backends' do: what its tasks
  // reach may be freed as soon as the destructor returns.
  Gate gate;
  std::atomic<int> runs{0};
  Queue q(Device::host());
  Fence f;
  std::thread opener([&] {
    std::this_thread::sleep_for(20ms);
    gate.open = true;
  });
  {
    CommandBuffer cmd("short-lived");
    cmd.host([&] {
      gate.wait();
      ++runs;
    });
    Executable exe = compile(cmd, Device::host());
    f = exe.launch(q);
  }  // waits for the task
  CHECK(runs == 1);
  opener.join();
  f.wait();
}

TEST_CASE("host.empty_buffer.is_a_noop" * doctest::timeout(10)) {
  CommandBuffer cmd("empty");
  Executable exe = compile(cmd, Device::host());
  CHECK(exe.stats().commands == 0);
  Queue q(Device::host());
  for (int i = 0; i < 10; ++i) exe.launch(q);
  exe.launch(q).wait();
  q.wait();
}

namespace {
// Resident memory of this process in bytes (Linux), 0 where unknown.
std::size_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::size_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * 4096;
}
}  // namespace

TEST_CASE("host.chain.100k_commands" * doctest::timeout(120)) {
  std::atomic<int> order_errors{0};
  int expected = 0;
  const std::size_t before = resident_bytes();
  CommandBuffer cmd("long");
  Command prev;
  for (int i = 0; i < 100000; ++i) {
    auto c = cmd.host([&, i] {
      if (expected++ != i) ++order_errors;
    });
    if (i) c.after(prev);
    prev = c;
  }
  Queue q(Device::host());
  Executable exe = compile(cmd, Device::host());
  const std::size_t after = resident_bytes();
  exe.launch(q).wait();
  CHECK(expected == 100000);
  CHECK(order_errors == 0);
  // Memory for recording and compiling 100,000 commands (host tasks and their edges).
  const double per_command = after > before ? double(after - before) / 100000 : 0;
  MESSAGE("100,000-command chain: " << (after - before) / 1024 << " KiB resident for the buffer "
                                    "and its executable, " << per_command << " bytes per command");
  CHECK(per_command < 4096);
}
