// bench_hazards_cuda: what declared access costs on the cuda_graph backend
// (bench/hazard_programs.hpp): each command an empty kernel over device buffers, so compile
// includes lowering, cudaGraphInstantiate and the upload, as a CUDA user pays it.
// Usage: bench_hazards_cuda [--nearby] [--only CONFIG] [commands...]
#include "hazard_programs.hpp"

namespace {
__global__ void touch_nothing() {}
}  // namespace

int main(int argc, char** argv) {
  using namespace cmdgraph;
  return hazard_bench::bench_main(
      argc, argv, Device::cuda(0), {.backend = Backend::cuda_graph},
      [](CommandBuffer& cmd) { return cmd.launch(&touch_nothing, LaunchConfig{{1}, {1}}); });
}
