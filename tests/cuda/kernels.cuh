// Kernels and functors shared by the GPU suites.
#pragma once

#include "support/ordering_oracle.hpp"

#include <cmdgraph/cmdgraph.hpp>

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
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

/// Adds 1 to *counter.
__global__ void increment(int* counter) { atomicAdd(counter, 1); }

/// Every backend a CUDA test exercises.
inline const Backend cuda_backends[] = {Backend::cuda_graph, Backend::streams};

/// Runs the statement after it once per CUDA backend, each time as a doctest subcase named
/// after the backend, so a failure says which backend failed.
#define CMDGRAPH_EACH_CUDA_BACKEND(backend)                                    \
  for (const ::cmdgraph::Backend backend : ::cmdgraph::testing::cuda_backends) \
  SUBCASE(::cmdgraph::to_string(backend))

}  // namespace cmdgraph::testing
