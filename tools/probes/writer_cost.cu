// What a frame of update-free arguments costs the host, part by part (issue 33, item 2).
//   nvcc -std=c++20 -O2 -arch=sm_90 -cudart shared -Iinclude -IBUILD/include
//        tools/probes/writer_cost.cu -o probe -LBUILD/lib -lcmdgraph
//        -Xlinker -rpath -Xlinker BUILD/lib
// A chain of 1,000 update-free one-thread kernels of parameters (int, int, int*), every one
// given new arguments each frame. Per kernel, medians of 15 trials, each part with the host's
// caches cold (after 64 MB were written, as recording a frame does) and warm (the same part
// again at once):
//   floor:   the frame's values converted and copied into an array by a plain loop;
//   convert: the conversion set() makes (detail::ConvertedArguments), to a sink;
//   set:     ArgumentWriter::set outside a frame, inside an UpdateFrame, and inside one that
//            follows an update by handle (of one kernel, outside the frame);
//   hand:    the launch that hands the frame to the device right after the writes, less a
//            launch with nothing new (both columns after the writes).
#include <cmdgraph/cmdgraph.hpp>

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <vector>

#include "probe.hpp"

using namespace cmdgraph;

namespace {

__global__ void store(int i, int value, int* out) { out[i] = value; }

constexpr int n = 1000, trials = 15;

double ns_per_kernel(const auto& part) {
  const auto start = std::chrono::steady_clock::now();
  part();
  const auto end = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::nano>(end - start).count() / n;
}

std::vector<char> pollution(64 << 20);
void pollute() {
  std::memset(pollution.data(), static_cast<int>(pollution[12345] + 1), pollution.size());
}

struct Row {
  const char* name;
  std::vector<double> cold, warm;
};

}  // namespace

int main() {
  const Device gpu = Device::cuda(0);
  int* out = nullptr;
  CHECK(cudaMalloc(&out, sizeof(int) * n));
  CommandBuffer cmd("frame");
  std::vector<KernelCommand<int, int, int*>> kernels;
  for (int i = 0; i < n; ++i) {
    auto k = cmd.launch(&store, LaunchConfig{{1}, {1}}, i, i, out).update_free();
    if (i) k.after(kernels.back());
    kernels.push_back(k);
  }
  Executable exe = compile(cmd, gpu, {.backend = Backend::cuda_graph});
  if (exe.stats().commands_update_free != n) {
    std::fprintf(stderr, "expected %d update-free kernels, got %zu\n", n,
                 exe.stats().commands_update_free);
    return 1;
  }
  Queue q(gpu);
  std::vector<ArgumentWriter<int, int, int*>> writers;
  for (const auto& k : kernels) writers.push_back(exe.arguments(k));
  struct Values {
    int i, value;
    int* out;
  };
  std::vector<Values> floor_to(n);
  int frame = 0;

  Row floor{"floor: convert + copy into an array"}, convert{"convert alone"},
      plain{"set(), no frame"}, framed{"set() in an update frame"},
      after_update{"set() in a frame after an update by handle"},
      hand{"launch handing them over - launch alone"};
  auto measure = [&](Row& row, const auto& part) {
    pollute();
    row.cold.push_back(part());
    row.warm.push_back(part());
  };
  for (int t = 0; t < trials; ++t) {
    measure(floor, [&] {
      ++frame;
      return ns_per_kernel([&] {
        for (int i = 0; i < n; ++i) floor_to[i] = {i, 1000 * frame + i, out};
        asm volatile("" : : "r"(floor_to.data()) : "memory");
      });
    });
    measure(convert, [&] {
      ++frame;
      return ns_per_kernel([&] {
        for (int i = 0; i < n; ++i) {
          const detail::ConvertedArguments<int, int, int*> c(i, 1000 * frame + i, out);
          const detail::KernelArguments a = c.arguments();
          asm volatile("" : : "r"(a.params) : "memory");  // the conversion's stores stay
        }
      });
    });
    for (Row* row : {&plain, &framed, &after_update}) {
      measure(*row, [&] {
        ++frame;
        if (row == &after_update) exe.update(kernels[0], 0, 1000 * frame, out);
        const double ns = ns_per_kernel([&] {
          std::optional<UpdateFrame> held;
          if (row != &plain) held = exe.update_frame();
          for (int i = 0; i < n; ++i) writers[i].set(i, 1000 * frame + i, out);
        });
        exe.launch(q).wait();
        return ns;
      });
    }
    measure(hand, [&] {
      ++frame;
      for (int i = 0; i < n; ++i) writers[i].set(i, 1000 * frame + i, out);
      const double handing = ns_per_kernel([&] { exe.launch(q); });
      q.wait();
      const double alone = ns_per_kernel([&] { exe.launch(q); });
      q.wait();
      return handing - alone;
    });
  }
  std::vector<int> seen(n);
  CHECK(cudaMemcpy(seen.data(), out, sizeof(int) * n, cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) {
    if (seen[i] != 1000 * frame + i) {
      std::fprintf(stderr, "kernel %d wrote %d, not %d\n", i, seen[i], 1000 * frame + i);
      return 1;
    }
  }
  std::printf("%d update-free kernels of (int, int, int*), ns per kernel, medians of %d\n", n,
              trials);
  std::printf("%-44s %8s %8s\n", "part", "cold", "warm");
  for (const Row* row : {&floor, &convert, &plain, &framed, &after_update, &hand}) {
    std::printf("%-44s %8.2f %8.2f\n", row->name, probe::median(row->cold), probe::median(row->warm));
  }
  CHECK(cudaFree(out));
  return 0;
}
