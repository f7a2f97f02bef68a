// The runner of GPU suites: on a machine with fewer CUDA devices than the suite needs
// (CMDGRAPH_TEST_DEVICES, default 1) it says so and exits with 77, which meson reports as SKIP
// (CI stays green and honest); otherwise it runs doctest.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cmdgraph/device.hpp>

#include <cstdio>
#include <cstdlib>

#ifndef CMDGRAPH_TEST_DEVICES
#define CMDGRAPH_TEST_DEVICES 1
#endif

int main(int argc, char** argv) {
  // Stream priorities only act between streams on different hardware queues; CUDA's default
  // of 8 lets the many queues of these suites share them. Must be set before CUDA starts.
  setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", 0);
  if (const int visible = cmdgraph::Device::count(); visible < CMDGRAPH_TEST_DEVICES) {
    std::printf("%d CUDA device(s) visible, this GPU suite needs %d: skipped\n", visible,
                CMDGRAPH_TEST_DEVICES);
    return 77;
  }
  const cmdgraph::DeviceProperties p = cmdgraph::Device::cuda(0).properties();
  std::printf("running on %s (sm_%d%d, %d SMs)\n", p.name.c_str(), p.compute_major,
              p.compute_minor, p.multiprocessors);
  doctest::Context context(argc, argv);
  return context.run();
}
