// bench_record_parallel: an engine records its passes on several threads into secondary
// buffers and one primary executes them (issue 33, item 4). Times, for K secondaries of N
// commands each (default 8 x 1,000 kernels' worth of parallel_for commands, chained), recording
// them on one thread against recording them on K threads, and the whole frame (record the
// secondaries, record the primary that executes them, update the executable in place) the
// same two ways. Threads are started once and released by a barrier, so thread creation is not
// timed; each way has buffers of its own, each pass recorded by the same thread every frame.
// Medians of alternating trials; prints each and the ratio parallel / serial.
// Usage: bench_record_parallel [secondaries] [commands] [trials]
#include "host_bench.hpp"

#include <cmdgraph/cmdgraph.hpp>

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

namespace {

using namespace cmdgraph;
using host_bench::Clock;
using host_bench::elapsed_us;
using host_bench::median;
using host_bench::Scale;

// One pass: N commands in a chain, each with its own argument value (as a frame's would be).
void record_pass(CommandBuffer& pass, float* data, std::size_t commands, float frame) {
  pass.reset();
  Command previous = pass.parallel_for(1, Scale{data, frame});
  for (std::size_t c = 1; c < commands; ++c) {
    Command next = pass.parallel_for(1, Scale{data, frame + static_cast<float>(c)});
    next.after(previous);
    previous = next;
  }
}

// K threads that each run job(k) when released, and report back through the same barrier.
class Workers {
 public:
  explicit Workers(std::size_t count) : barrier_(static_cast<std::ptrdiff_t>(count) + 1) {
    for (std::size_t k = 0; k < count; ++k) {
      threads_.emplace_back([this, k] {
        for (;;) {
          barrier_.arrive_and_wait();  // released
          if (stop_) return;
          job_(k);
          barrier_.arrive_and_wait();  // done
        }
      });
    }
  }
  ~Workers() {
    stop_ = true;
    barrier_.arrive_and_wait();
    for (auto& t : threads_) t.join();
  }
  void run(const std::function<void(std::size_t)>& job) {
    job_ = job;
    barrier_.arrive_and_wait();
    barrier_.arrive_and_wait();
  }

 private:
  std::barrier<> barrier_;
  std::function<void(std::size_t)> job_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace

// One way of recording a frame: its pass buffers (recorded by the same thread every frame, as
// an engine's per-thread command pools are), the primary executing them and its executable.
struct Frame {
  std::vector<std::unique_ptr<CommandBuffer>> passes;
  CommandBuffer primary{"frame"};
  Executable exe;
};

int main(int argc, char** argv) {
  const std::size_t passes = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 8;
  const std::size_t commands = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1000;
  const int trials = argc > 3 ? std::atoi(argv[3]) : 21;
  const Device host = Device::host();
  std::vector<Buffer<float>> data;
  for (std::size_t k = 0; k < passes; ++k) data.emplace_back(host, 1);
  Workers workers(passes);
  Frame serial_frame, parallel_frame;
  for (Frame* f : {&serial_frame, &parallel_frame}) {
    for (std::size_t k = 0; k < passes; ++k) {
      f->passes.push_back(std::make_unique<CommandBuffer>("pass" + std::to_string(k)));
    }
  }
  float value = 1;
  auto record = [&](Frame& f, bool in_parallel) {
    if (in_parallel) {
      workers.run(
          [&](std::size_t k) { record_pass(*f.passes[k], data[k].data(), commands, value); });
    } else {
      for (std::size_t k = 0; k < passes; ++k) {
        record_pass(*f.passes[k], data[k].data(), commands, value);
      }
    }
  };
  auto record_primary = [&](Frame& f) {
    f.primary.reset();
    for (auto& p : f.passes) f.primary.execute(*p);
  };
  for (Frame* f : {&serial_frame, &parallel_frame}) {
    record(*f, f == &parallel_frame);
    record_primary(*f);
    f->exe = compile(f->primary, host);
  }

  std::vector<double> serial, parallel, frame_serial, frame_parallel;
  std::size_t changed = 0;
  for (int t = 0; t < trials; ++t) {
    const bool parallel_first = t % 2 == 1;  // alternate which goes first
    for (int side = 0; side < 2; ++side) {
      const bool in_parallel = (side == 0) == parallel_first;
      Frame& f = in_parallel ? parallel_frame : serial_frame;
      value += 1;
      auto start = Clock::now();
      record(f, in_parallel);
      (in_parallel ? parallel : serial).push_back(elapsed_us(start));

      value += 1;
      start = Clock::now();
      record(f, in_parallel);
      record_primary(f);
      changed = f.exe.update(f.primary).commands_changed;
      (in_parallel ? frame_parallel : frame_serial).push_back(elapsed_us(start));
    }
  }
  std::printf("%zu passes x %zu commands, %u hardware threads, medians of %d trials\n", passes,
              commands, std::thread::hardware_concurrency(), trials);
  std::printf("%-44s %12s %12s %7s\n", "", "1 thread us", "K threads us", "ratio");
  std::printf("%-44s %12.0f %12.0f %7.3f\n", "record the passes", median(serial),
              median(parallel), median(parallel) / median(serial));
  std::printf("%-44s %12.0f %12.0f %7.3f\n", "frame: record passes + primary, update",
              median(frame_serial), median(frame_parallel),
              median(frame_parallel) / median(frame_serial));
  std::printf("commands changed by the last update: %zu\n", changed);
  return 0;
}
