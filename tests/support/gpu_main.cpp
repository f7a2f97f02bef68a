// The runner of GPU suites: on a machine without a CUDA device it says so and exits with 77,
// which meson reports as SKIP (CI stays green and honest); otherwise it runs doctest.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cmdgraph/device.hpp>

#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
  // Stream priorities only act between streams on different hardware queues; CUDA's default
  // of 8 lets the many queues of these suites share them. Must be set before CUDA starts.
  setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", 0);
  if (cmdgraph::Device::count() == 0) {
    std::printf("no CUDA device visible: this GPU suite is skipped\n");
    return 77;
  }
  const cmdgraph::DeviceProperties p = cmdgraph::Device::cuda(0).properties();
  std::printf("running on %s (sm_%d%d, %d SMs)\n", p.name.c_str(), p.compute_major,
              p.compute_minor, p.multiprocessors);
  doctest::Context context(argc, argv);
  return context.run();
}
