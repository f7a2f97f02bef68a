// The seed's performance monitoring: one kernel timed between two timed events, then through
// profile mode; on the GPU or the host backend. [--elements N] [--trace PATH (Chrome trace)]
#include "sample.hpp"

#include <cstdio>
#include <string_view>

using namespace cmdgraph;

namespace {

struct Saxpy {
  float a;
  const float* x;
  float* y;
  CMDGRAPH_HOST_DEVICE void operator()(std::size_t i) const { y[i] = a * x[i] + y[i]; }
};

// Fills x and y, then runs y = 3x + y between the records of `start` and `stop`, then copies y
// out to `result`.
CommandBuffer record_saxpy(const Buffer<float>& x, const Buffer<float>& y,
                           const HostBuffer<float>& result, const Event& start,
                           const Event& stop) {
  const std::size_t n = x.size();
  CommandBuffer cmd("saxpy");
  auto fill_x = cmd.fill(x, 1.0f, n).named("fill x");
  auto fill_y = cmd.fill(y, 2.0f, n).named("fill y");
  auto begin = cmd.record(start).after(fill_x, fill_y).named("start");
  auto saxpy = cmd.parallel_for(n, Saxpy{3.0f, x.data(), y.data()}).after(begin).named("saxpy");
  auto end = cmd.record(stop).after(saxpy).named("stop");
  cmd.copy(result, y, n).after(end).named("copy out");  // after "stop", so it cannot delay it
  return cmd;
}

const char* trace_path(int argc, char** argv) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::string_view(argv[i]) == "--trace") return argv[i + 1];
  }
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  const Device device = Device::best();
  const std::size_t n =
      sample::flag(argc, argv, "--elements", device.is_cuda() ? 1 << 26 : 1 << 22);
  Buffer<float> x(device, n), y(device, n);
  HostBuffer<float> result(n);
  Queue queue(device);
  std::printf("event_timing: y = 3x + y over %zu floats on %s (%s)\n", n, device.name().c_str(),
              device.properties().name.c_str());

  // 1. Timed events: recorded by commands just before and after the kernel.
  Event start(device, {.timing = true}), stop(device, {.timing = true});
  CommandBuffer timed_cmd = record_saxpy(x, y, result, start, stop);
  Executable timed = compile(timed_cmd, device);
  timed.launch(queue);  // warm-up
  timed.launch(queue).wait();
  const double event_ms = Event::elapsed(start, stop).count();

  // 2. Profile mode: every command of the launch timed, no events of our own needed.
  CommandBuffer profiled_cmd = record_saxpy(x, y, result, start, stop);
  Executable profiled = compile(profiled_cmd, device, {.profile = true});
  profiled.launch(queue);
  profiled.launch(queue).wait();
  const Profile profile = profiled.last_profile();
  double profile_ms = -1;
  for (const CommandTiming& c : profile.commands) {
    if (c.name == "saxpy") profile_ms = c.duration_ms();
  }

  const double gigabytes = 3.0 * sizeof(float) * double(n) / 1e9;  // read x, y; write y
  std::printf("saxpy between timed events: %.3f ms (%.0f GB/s)\n", event_ms,
              gigabytes / event_ms * 1e3);
  std::printf("saxpy in the profile:       %.3f ms (whole launch %.3f ms, %zu commands, %s)\n",
              profile_ms, profile.launch_ms, profile.commands.size(), profile.backend.c_str());
  if (const char* path = trace_path(argc, argv)) {
    profile.write_trace(path);
    std::printf("Chrome trace of the profiled launch written to %s\n", path);
  }

  std::size_t wrong = 0;
  for (float v : result) wrong += v != 5.0f;
  return sample::verdict("event_timing", wrong == 0 && profile_ms >= 0);
}
