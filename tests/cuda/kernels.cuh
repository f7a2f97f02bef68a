// Kernels and functors shared by the GPU suites.
#pragma once

#include "support/expect_error.hpp"
#include "support/ordering_oracle.hpp"

#include <cmdgraph/cmdgraph.hpp>

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace cmdgraph::testing {

/// Aborts the test binary on a failed raw CUDA call in test code (setup and checks).
#define TEST_CUDA(call)                                                                  \
  do {                                                                                   \
    const cudaError_t status_ = (call);                                                  \
    if (status_ != cudaSuccess) {                                                        \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,                 \
                   cudaGetErrorString(status_));                                         \
      std::abort();                                                                      \
    }                                                                                    \
  } while (0)

/// One ticket as a plain kernel launch (block 1, thread 1). It waits for its parents first, so
/// it may sit at the end of a programmatic edge (a no-op otherwise).
__global__ void ticket_kernel(Ticket t) {
  cudaGridDependencySynchronize();
  t(0);
}

/// y[i] = a * x[i] + y[i].
__global__ void axpy_kernel(int n, float a, const float* x, float* y) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

/// out[i] = value for i < n.
__global__ void set_kernel(int n, int value, int* out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = value;
}

struct Scale {
  const float* in;
  float* out;
  float factor;
  __host__ __device__ void operator()(std::size_t i) const { out[i] = in[i] * factor; }
};

/// Makes a device current for raw CUDA calls in test code, restoring the previous one after.
class OnDevice {
 public:
  explicit OnDevice(Device d) {
    TEST_CUDA(cudaGetDevice(&previous_));
    TEST_CUDA(cudaSetDevice(d.ordinal()));
  }
  ~OnDevice() { TEST_CUDA(cudaSetDevice(previous_)); }
  OnDevice(const OnDevice&) = delete;
  OnDevice& operator=(const OnDevice&) = delete;

 private:
  int previous_ = 0;
};

/// A ticket board in device memory, poisoned; read back into Observations.
struct DeviceBoard {
  Buffer<std::uint32_t> counter, first, last, runs;
  std::size_t cells;
  DeviceBoard(Device d, std::size_t cells_)
      : counter(d, 1), first(d, cells_), last(d, cells_), runs(d, cells_), cells(cells_) {
    const OnDevice on(d);
    Observations poison(cells);
    TEST_CUDA(cudaMemset(counter.data(), 0, sizeof(std::uint32_t)));
    TEST_CUDA(cudaMemcpy(first.data(), poison.first.data(), cells * 4, cudaMemcpyHostToDevice));
    TEST_CUDA(cudaMemcpy(last.data(), poison.last.data(), cells * 4, cudaMemcpyHostToDevice));
    TEST_CUDA(cudaMemcpy(runs.data(), poison.runs.data(), cells * 4, cudaMemcpyHostToDevice));
    // Copies from pageable memory may still be in flight, and the legacy stream they use does
    // not order the non-blocking streams of our queues.
    TEST_CUDA(cudaDeviceSynchronize());
  }
  TicketBoard board(std::uint32_t vertices, std::uint32_t per_launch, std::uint32_t launches) {
    return {counter.data(), first.data(), last.data(), runs.data(), vertices, per_launch, launches};
  }
  Observations read() const {
    Observations o(cells);
    TEST_CUDA(cudaMemcpy(o.first.data(), first.data(), cells * 4, cudaMemcpyDeviceToHost));
    TEST_CUDA(cudaMemcpy(o.last.data(), last.data(), cells * 4, cudaMemcpyDeviceToHost));
    TEST_CUDA(cudaMemcpy(o.runs.data(), runs.data(), cells * 4, cudaMemcpyDeviceToHost));
    return o;
  }
};

}  // namespace cmdgraph::testing

namespace cmdgraph::testing {

/// Spins until the host writes a non-zero value to `flag` (pinned memory): holds work in
/// flight for as long as a test needs.
__global__ void spin_until(volatile int* flag) {
  while (*flag == 0) {
  }
}

/// Busy for about `cycles` SM cycles in every thread: device work of a known length.
__global__ void busy(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

/// Busy for about `ns` nanoseconds of the GPU's global timer in every thread: a length in time
/// whatever clock the SMs run at (counting cycles, a kernel runs longer on a GPU still at a low
/// clock after idling).
__global__ void busy_ns(long long ns) {
  long long start = 0, now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}

/// Adds 1 to *counter.
__global__ void increment(int* counter) { atomicAdd(counter, 1); }

/// The ints of device buffer `b`.
inline std::vector<int> read_ints(const Buffer<int>& b) {
  std::vector<int> out(b.size());
  TEST_CUDA(cudaMemcpy(out.data(), b.data(), b.size() * sizeof(int), cudaMemcpyDeviceToHost));
  return out;
}

/// Writes `values` to device buffer `b` and waits: the legacy stream of the copy does not
/// order the non-blocking streams of our queues.
inline void write_ints(const Buffer<int>& b, const std::vector<int>& values) {
  TEST_CUDA(cudaMemcpy(b.data(), values.data(), values.size() * sizeof(int),
                       cudaMemcpyHostToDevice));
  TEST_CUDA(cudaDeviceSynchronize());
}

/// Every int of `b` set to -1, which no test writes, so nothing passes unless written.
inline void poison(const Buffer<int>& b) { write_ints(b, std::vector<int>(b.size(), -1)); }

/// Every backend a CUDA test exercises.
inline const Backend cuda_backends[] = {Backend::cuda_graph, Backend::streams};

/// Runs the statement after it once per CUDA backend, each time as a doctest subcase named
/// after the backend, so a failure says which backend failed.
#define CMDGRAPH_EACH_CUDA_BACKEND(backend)                                    \
  for (const ::cmdgraph::Backend backend : ::cmdgraph::testing::cuda_backends) \
  SUBCASE(::cmdgraph::to_string(backend))

}  // namespace cmdgraph::testing

namespace cmdgraph::testing {

/// compile() of `cmd` for `gpu` must refuse it with Error(unsupported) naming exactly
/// `command`, whichever CUDA backend is asked for (automatic, cuda_graph, streams).
inline void refused_on_every_cuda_backend(CommandBuffer& cmd, Device gpu,
                                          const std::string& command) {
  for (Backend backend : {Backend::automatic, Backend::cuda_graph, Backend::streams}) {
    CAPTURE(to_string(backend));
    auto e = CMDGRAPH_EXPECT_ERROR(compile(cmd, gpu, {.backend = backend}), errc::unsupported);
    REQUIRE(e);
    CHECK(e->commands() == std::vector<std::string>{command});
  }
}

}  // namespace cmdgraph::testing
