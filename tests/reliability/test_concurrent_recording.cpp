// Two threads using one command buffer or executable at once: recording into one buffer, an
// update racing a launch, recording into a buffer another thread executes, are detected
// (Error(concurrent_use)) and leave everything usable; executing one sealed secondary from
// several threads and launching one executable from several threads are allowed.
#include "support/expect_error.hpp"

#include <cmdgraph/cmdgraph.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

using namespace cmdgraph;

TEST_CASE("reliability.two_threads_recording_one_buffer" * doctest::timeout(120)) {
  CommandBuffer cmd("contended");
  std::atomic<int> caught{0}, recorded{0};
  // Whether the two threads overlap is the scheduler's call: on a busy machine one may finish
  // a round before the other starts. Rounds on a fresh buffer until they have collided.
  for (int round = 0; round < 100 && caught == 0; ++round) {
    cmd = CommandBuffer("contended");
    recorded = 0;
    std::atomic<bool> go{false};
    auto hammer = [&] {
      while (!go) {
      }
      for (int i = 0; i < 20000 && caught == 0; ++i) {
        try {
          cmd.host([] {});
          ++recorded;
        } catch (const Error& e) {
          CHECK(e.code() == errc::concurrent_use);
          ++caught;
        }
      }
    };
    std::thread t1(hammer), t2(hammer);
    go = true;
    t1.join();
    t2.join();
  }
  CHECK(caught > 0);
  CHECK(cmd.size() == static_cast<std::size_t>(recorded.load()));  // nothing half-recorded
  Queue q(Device::host());
  compile(cmd, Device::host()).launch(q).wait();
}

TEST_CASE("reliability.update_racing_launch" * doctest::timeout(120)) {
  // update() from one thread while another launches raced silently (TSan); now the update or
  // the launch that overlaps the other is refused, and nothing changes.
  int target = 0;
  CommandBuffer cmd("raced");
  auto set = cmd.fill(host_view(&target, 1), 1, 1);
  Executable exe = compile(cmd, Device::host());
  Queue q(Device::host());
  std::atomic<int> caught{0};
  for (int round = 0; round < 100 && caught == 0; ++round) {
    std::atomic<bool> go{false};
    std::thread launcher([&] {
      while (!go) {
      }
      for (int i = 0; i < 2000 && caught == 0; ++i) {
        try {
          exe.launch(q);
        } catch (const Error& e) {
          CHECK(e.code() == errc::concurrent_use);
          ++caught;
        }
      }
    });
    go = true;
    for (int i = 0; i < 2000 && caught == 0; ++i) {
      try {
        exe.update(set, host_view(&target, 1), 2, 1);
      } catch (const Error& e) {
        CHECK(e.code() == errc::concurrent_use);
        ++caught;
      }
    }
    launcher.join();
    q.wait();
  }
  CHECK(caught > 0);
  exe.update(set, host_view(&target, 1), 3, 1);
  exe.launch(q).wait();
  CHECK(target == 3);
}

TEST_CASE("reliability.secondary_executed_from_four_threads" * doctest::timeout(120)) {
  // Executing a buffer only reads it (and seals it): many primaries on many threads may.
  std::atomic<int> runs{0};
  CommandBuffer secondary("shared");
  secondary.host([&] { ++runs; });
  std::vector<CommandBuffer> primaries;
  for (int t = 0; t < 4; ++t) primaries.emplace_back("primary" + std::to_string(t));
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) primaries[t].execute(secondary);
    });
  }
  for (auto& th : threads) th.join();
  CHECK(secondary.sealed());
  Queue q(Device::host());
  for (auto& p : primaries) {
    CHECK(p.size() == 200);
    compile(p, Device::host()).launch(q).wait();
  }
  CHECK(runs == 800);
}

TEST_CASE("reliability.recording_into_a_buffer_being_executed" * doctest::timeout(120)) {
  // One thread records into a buffer while another executes it: each call either succeeds,
  // or is refused (concurrent_use while they overlap, wrong_state once it is sealed).
  for (int round = 0; round < 20; ++round) {
    CommandBuffer body("body");
    body.host([] {});
    CommandBuffer primary("primary");
    std::atomic<bool> go{false};
    std::thread recorder([&] {
      while (!go) {
      }
      for (int i = 0; i < 2000; ++i) {
        try {
          body.host([] {});
        } catch (const Error& e) {
          CHECK((e.code() == errc::concurrent_use || e.code() == errc::wrong_state));
          if (e.code() == errc::wrong_state) break;
        }
      }
    });
    go = true;
    bool executed = false;
    while (!executed) {
      try {
        primary.execute(body);
        executed = true;
      } catch (const Error& e) {
        CHECK(e.code() == errc::concurrent_use);
      }
    }
    recorder.join();
    CHECK(body.sealed());
    Queue q(Device::host());
    compile(primary, Device::host()).launch(q).wait();
  }
}
