// CMDGRAPH_HOST_DEVICE: marks a functor's call operator for both the CPU and, in translation
// units compiled by nvcc, the GPU, so one parallel_for runs on every backend.
#pragma once

/// \file
/// CMDGRAPH_HOST_DEVICE, for the call operators of parallel_for functors and loop conditions.

/// `__host__ __device__` in files compiled by nvcc, nothing elsewhere. Required on the call
/// operator of every parallel_for functor and loop_while condition recorded in a .cu file
/// (nvcc builds the kernel that calls it; a host-only operator does not compile there), and
/// harmless in host-only files, so one functor serves every backend.
#if defined(__CUDACC__)
#define CMDGRAPH_HOST_DEVICE __host__ __device__
#else
#define CMDGRAPH_HOST_DEVICE
#endif
