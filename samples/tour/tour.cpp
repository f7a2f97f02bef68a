// The quick start: record a small pipeline once, compile it for the best device (the GPU when
// there is one, else the CPU), launch it 100 times, and check the result. In CUDA builds this
// same file is compiled by nvcc, which gives the parallel_for a GPU version.
#include <cmdgraph/cmdgraph.hpp>

#include <cstdio>
#include <cstdlib>

namespace {

// A parallel_for functor: plain data, callable with an index, on the host and the device.
struct Scale {
  const float* in;
  float* out;
  float factor;
  CMDGRAPH_HOST_DEVICE void operator()(std::size_t i) const { out[i] = in[i] * factor; }
};

}  // namespace

int main() {
  using namespace cmdgraph;
  constexpr std::size_t n = 1 << 20;
  const Device device = Device::best();

  Buffer<float> in(device, n), tmp(device, n);  // device memory (host memory on the CPU)
  HostBuffer<float> out(n);                     // pinned when there is a GPU
  for (float& v : out) v = -1.0f;               // poison: every element must be written
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
  const bool ok = wrong == 0 && loads == 100;
  std::printf("cmdgraph tour: %s (%s), backend %s: %s\n", device.name().c_str(),
              device.properties().name.c_str(), to_string(exe.backend()),
              exe.stats().backend_reason.c_str());
  std::printf("%zu commands, %zu edges; launched 100 times: %d loads, %zu of %zu outputs wrong "
              "-> %s\n",
              exe.stats().commands, exe.stats().edges_reduced, loads, wrong, n,
              ok ? "OK" : "FAILED");
  return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
