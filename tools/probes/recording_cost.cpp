// recording_cost: what recording a decoding step's kernels costs the host, as samples/decode_loop
// records them: 75 kernels of 7 parameters a frame, each named and marked update-free, chained
// by after() or fanned out and joined by after_all(). The buffer is reset and recorded again
// each frame; the best frame's time a kernel is printed. For instructions, run a few frames
// under callgrind (`valgrind --tool=callgrind ./recording_cost 41`) and divide main's
// inclusive count by 75 x the frames.
// Build: g++ -std=c++20 -O2 -g -Iinclude -I<build>/include tools/probes/recording_cost.cpp
//        -L<build>/lib -lcmdgraph -Wl,-rpath,<build>/lib -o recording_cost
#include <cmdgraph/cmdgraph.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

using namespace cmdgraph;

// A kernel's signature (only recorded here: never launched).
void step_kernel(const float*, const float*, const float*, float*, int, int, int) {}

struct Recorder {
  CommandBuffer& cmd;
  Command last;
  std::vector<Command> fan;
  float* memory;

  KernelCommand<const float*, const float*, const float*, float*, int, int, int> record(
      const char* name, int value) {
    return cmd.launch(step_kernel, LaunchConfig{{64, 1, 1}, {256, 1, 1}}, memory, memory,
                      nullptr, memory, value, value + 1, 0)
        .named(name)
        .update_free();
  }
  void serial(const char* name, int value) {
    auto k = record(name, value);
    if (!fan.empty()) {
      k.after_all(fan);
      fan.clear();
    } else if (last.valid()) {
      k.after(last);
    }
    last = k;
  }
  void parallel(const char* name, int value) {
    auto k = record(name, value);
    if (last.valid()) k.after(last);
    fan.push_back(k);
  }
};

int main(int argc, char** argv) {
  const int frames = argc > 1 ? std::atoi(argv[1]) : 401;
  static float memory[16];
  CommandBuffer cmd("step");
  double best = 1e300;
  for (int f = 0; f < frames; ++f) {
    const auto start = std::chrono::steady_clock::now();
    cmd.reset();
    Recorder r{cmd, {}, {}, memory};
    r.serial("embed", f);
    for (int layer = 0; layer < 8; ++layer) {
      r.serial("qkv", f);
      r.serial("append kv", f);
      for (int c = 0; c < 2; ++c) r.parallel("attend chunk", c);
      r.serial("combine", f);
      r.serial("out", f);
      r.serial("up", f);
      r.serial("down", f);
    }
    r.serial("logits", f);
    r.serial("sample", f);
    const double ns =
        std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
    best = std::min(best, ns / 75);
  }
  std::printf("%d frames of 75 kernels: best %.1f ns a kernel\n", frames, best);
}
