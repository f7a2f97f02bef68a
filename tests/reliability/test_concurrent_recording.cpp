// Two threads recording into one command buffer is detected (Error(concurrent_use)) and
// leaves the buffer usable.
#include "support/expect_error.hpp"

#include <cmdgraph/cmdgraph.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <thread>

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
