// The quick start: record a small pipeline once, compile it for the best device, launch it
// 100 times, and check the result. Runs on the host backend when there is no GPU.
#include <cmdgraph/cmdgraph.hpp>

#include <cstdio>
#include <cstdlib>

namespace {

// A parallel_for functor: plain data, callable with an index. (Compiled by nvcc with
// __host__ __device__ it would run on the GPU too; here it is host code.)
struct Scale {
  const float* in;
  float* out;
  float factor;
  void operator()(std::size_t i) const { out[i] = in[i] * factor; }
};

}  // namespace

int main() {
  using namespace cmdgraph;
  constexpr std::size_t n = 1 << 20;
  const Device device = Device::host();  // tour runs on the CPU; GPU samples pick Device::best()

  Buffer<float> in(device, n), tmp(device, n);
  HostBuffer<float> out(n);
  int loads = 0;

  // 1. Record: commands plus explicit edges. Nothing runs yet.
  CommandBuffer cmd("step");
  auto load = cmd.host([&] { ++loads; }).named("load");
  auto init = cmd.fill(in, 1.5f, n).after(load).named("init");
  auto prep = cmd.parallel_for(n, Scale{in.data(), tmp.data(), 2.0f}).after(init).named("prep");
  cmd.copy(out, tmp, n).after(prep).named("save");

  // 2. Compile: validate, sort, reduce, lower for the device.
  Executable exe = compile(cmd, device);

  // 3. Launch 100 times; launches of one executable run one after another.
  Queue queue(device);
  for (int i = 0; i < 100; ++i) exe.launch(queue);
  queue.wait();

  // 4. Check.
  std::size_t wrong = 0;
  for (float v : out) wrong += v != 3.0f;
  std::printf("cmdgraph tour: device %s, backend %s (%s), %zu commands, %zu edges\n",
              exe.device().name().c_str(), to_string(exe.backend()),
              exe.stats().backend_reason.c_str(), exe.stats().commands,
              exe.stats().edges_reduced);
  std::printf("launched 100 times: %d loads, %zu of %zu outputs wrong -> %s\n", loads, wrong, n,
              wrong == 0 && loads == 100 ? "OK" : "FAILED");
  return wrong == 0 && loads == 100 ? EXIT_SUCCESS : EXIT_FAILURE;
}
