// A host-only program using an installed cmdgraph, as the packaging tests build it with CMake,
// Meson, pkg-config and a g++ command line. It runs on the host device, so it runs anywhere.
#include <cmdgraph/cmdgraph.hpp>

#include <cstdio>
#include <vector>

namespace {

struct Square {  // a parallel_for functor: plain data and a call operator
  const int* in;
  int* out;
  CMDGRAPH_HOST_DEVICE void operator()(std::size_t i) const { out[i] = in[i] * in[i]; }
};

}  // namespace

int main() {
  using namespace cmdgraph;
  constexpr std::size_t n = 1000;
  const Device host = Device::host();
  Buffer<int> in(host, n), out(host, n);
  std::vector<int> result(n, -1);
  int prepared = 0;

  CommandBuffer cmd("consumer");
  auto prepare = cmd.host([&] {
    for (std::size_t i = 0; i < n; ++i) in.data()[i] = static_cast<int>(i);
    ++prepared;
  });
  auto square = cmd.parallel_for(n, Square{in.data(), out.data()}).after(prepare);
  cmd.copy(host_view(result.data(), n), out, n).after(square);
  Executable exe = compile(cmd, host);
  Queue queue(host);
  exe.launch(queue);
  exe.launch(queue).wait();

  std::size_t wrong = 0;
  for (std::size_t i = 0; i < n; ++i) wrong += result[i] != static_cast<int>(i * i);
  std::printf("consumer: %d CUDA device(s) visible, backend %s, %zu of %zu wrong -> %s\n",
              Device::count(), to_string(exe.backend()), wrong, n,
              wrong == 0 && prepared == 2 ? "OK" : "FAILED");
  return wrong == 0 && prepared == 2 ? 0 : 1;
}
