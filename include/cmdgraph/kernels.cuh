// The one public header that needs nvcc: the kernels behind parallel_for and the conditional
// commands (loop_while, if_then, if_else, switch_on) on CUDA devices.
// cmdgraph.hpp includes it by itself in translation units compiled by nvcc.
#pragma once

#include <cmdgraph/detail/specs.hpp>

#include <cstddef>

namespace cmdgraph::detail {

/// A grid-stride loop calling f(i) for every i in [0, n). The functor is passed by value as
/// the kernel's first parameter, so the executable owns the copy that update() replaces. It
/// first waits for its parents (a no-op unless launched through a programmatic edge), so it
/// may sit at the end of one.
template <class F>
__global__ void parallel_for_kernel(F f, std::size_t n) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cudaGridDependencySynchronize();
#endif
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    f(i);
  }
}

/// Sets a conditional node's value from a condition functor: run alone (one thread) before the
/// node, and for a loop after each pass of its body.
template <class C>
__global__ void condition_kernel(C condition, cudaGraphConditionalHandle handle) {
  cudaGraphSetConditional(handle, condition() ? 1u : 0u);
}

/// Sets a SWITCH node's value from a selector functor (one thread, before the node): the body
/// it names, or none for a value outside the bodies (selector_value).
template <class S>
__global__ void selector_kernel(S selector, cudaGraphConditionalHandle handle) {
  cudaGraphSetConditional(handle, selector_value(selector()));
}

}  // namespace cmdgraph::detail
