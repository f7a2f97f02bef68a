// A CUDA program using an installed cmdgraph: a kernel of its own and a parallel_for, as the
// packaging tests build it with CMake and nvcc. Exits 77 (skipped) without a CUDA device.
#include <cmdgraph/cmdgraph.hpp>

#include <cstdio>

namespace {

__global__ void add_one(float* x, std::size_t n) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1.0f;
}

struct Twice {  // CMDGRAPH_HOST_DEVICE: in a .cu file the functor must run on the GPU too
  float* x;
  CMDGRAPH_HOST_DEVICE void operator()(std::size_t i) const { x[i] *= 2.0f; }
};

}  // namespace

int main() {
  using namespace cmdgraph;
  if (Device::count() == 0) {
    std::puts("consumer (CUDA): built; no CUDA device, so not run");
    return 77;
  }
  constexpr std::size_t n = 1 << 16;
  const Device gpu = Device::cuda(0);
  Buffer<float> x(gpu, n);
  HostBuffer<float> out(n);

  CommandBuffer cmd("consumer_cuda");
  auto init = cmd.fill(x, 1.0f, n);
  const unsigned blocks = static_cast<unsigned>((n + 255) / 256);
  auto inc = cmd.launch(add_one, LaunchConfig{{blocks}, {256}}, x.data(), n).after(init);
  auto twice = cmd.parallel_for(n, Twice{x.data()}).after(inc);
  cmd.copy(out, x, n).after(twice);
  Executable exe = compile(cmd, gpu);
  Queue queue(gpu);
  exe.launch(queue).wait();

  std::size_t wrong = 0;
  for (float v : out) wrong += v != 4.0f;
  std::printf("consumer (CUDA): %s, backend %s, %zu of %zu wrong -> %s\n", gpu.name().c_str(),
              to_string(exe.backend()), wrong, n, wrong == 0 ? "OK" : "FAILED");
  return wrong == 0 ? 0 : 1;
}
