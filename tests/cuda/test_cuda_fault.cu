// A device fault surfaces from the wait, naming the command; in a binary of its own because a
// fault ends the CUDA context of the process.
#include "cuda/kernels.cuh"
#include "support/expect_error.hpp"

#include <doctest/doctest.h>

using namespace cmdgraph;
using namespace cmdgraph::testing;

namespace {
__global__ void trap_kernel() { __trap(); }
}  // namespace

TEST_CASE("cuda.fault.trap_surfaces_from_the_wait" * doctest::timeout(60)) {
  const Device gpu = Device::cuda(0);
  HostBuffer<int> out(1);
  CommandBuffer cmd("faulty");
  auto t = cmd.launch(&trap_kernel, LaunchConfig{{1}, {1}}).named("trap");
  cmd.host([] {}).after(t).named("bystander");
  Executable exe = compile(cmd, gpu);
  Queue q(gpu);
  Fence f = exe.launch(q);  // returns: the fault happens later, on the device
  auto e = CMDGRAPH_EXPECT_ERROR(f.wait(), errc::cuda_error);
  REQUIRE(e);
  CHECK(e->commands() == std::vector<std::string>{"trap"});
  CHECK(e->cuda_status() != 0);
  CHECK(mentions(*e, "'trap'"));
  CHECK(f.ready());
}
