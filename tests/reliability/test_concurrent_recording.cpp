// Two threads using one command buffer or executable at once: recording into one buffer, an
// update racing a launch, recording into a buffer another thread executes, are detected
// (Error(concurrent_use)) and leave everything usable; executing one sealed secondary from
// several threads and launching one executable from several threads are allowed.
#include "support/expect_error.hpp"

#include <cmdgraph/cmdgraph.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

using namespace cmdgraph;

namespace {

// Runs `background` on another thread and `foreground` on this one, each again and again,
// until one of them is refused with Error(concurrent_use) (90 s at most: a busy machine that
// keeps them apart only makes the test longer). Returns how many calls were refused.
template <class Background, class Foreground>
int race_until_refused(Background background, Foreground foreground) {
  std::atomic<int> caught{0};
  std::atomic<bool> done{false};
  auto attempt = [&caught](auto& call) {
    try {
      call();
    } catch (const Error& e) {
      CHECK(e.code() == errc::concurrent_use);
      ++caught;
    }
  };
  std::thread other([&] {
    while (!done) attempt(background);
  });
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(90);
  while (caught == 0 && std::chrono::steady_clock::now() < give_up) attempt(foreground);
  done = true;
  other.join();
  return caught;
}

}  // namespace

TEST_CASE("reliability.two_threads_recording_one_buffer" * doctest::timeout(120)) {
  // One thread keeps the buffer busy with calls that take a while (an edge from each of 20,000
  // commands, validated before any is added), the other records single commands: whenever both
  // run, the second finds the first inside the buffer. Recording goes on until they collide,
  // so a busy machine that keeps them apart for a while only makes the test longer.
  CommandBuffer cmd("contended");
  std::vector<Command> many;
  for (int i = 0; i < 20000; ++i) many.push_back(cmd.host([] {}));
  const Command sink = cmd.host([] {});
  int recorded = 0;
  const int caught = race_until_refused([&] { Command(sink).after_all(many); },
                                        [&] {
                                          cmd.host([] {});
                                          ++recorded;
                                        });
  CHECK(caught > 0);
  CHECK(cmd.size() == 20001 + static_cast<std::size_t>(recorded));  // nothing half-recorded
  Queue q(Device::host());
  compile(cmd, Device::host()).launch(q).wait();
}

TEST_CASE("reliability.update_racing_launch" * doctest::timeout(120)) {
  // update() from one thread while another launches raced silently (TSan); now the update or
  // the launch that overlaps the other is refused, and nothing changes. One thread updates
  // back to back with a re-recorded buffer of 20,000 commands (each update plans it, holding
  // the executable for milliseconds), the other launches until a launch is refused.
  int target = 0;
  auto record = [&](CommandBuffer& cmd, int value) {
    cmd.fill(host_view(&target, 1), value, 1).named("set");
    for (int i = 0; i < 20000; ++i) cmd.barrier();
  };
  CommandBuffer cmd("raced");
  record(cmd, 1);
  Executable exe = compile(cmd, Device::host());
  Queue q(Device::host());
  const int caught = race_until_refused(
      [&] {
        CommandBuffer again("raced");
        record(again, 2);
        exe.update(again);
      },
      [&] { exe.launch(q).wait(); });
  q.wait();
  CHECK(caught > 0);
  CommandBuffer last("raced");
  record(last, 3);
  exe.update(last);  // nothing was left half-updated
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
