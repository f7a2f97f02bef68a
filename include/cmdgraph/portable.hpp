// CMDGRAPH_HOST_DEVICE: marks a functor's call operator for both the CPU and, in translation
// units compiled by nvcc, the GPU, so one parallel_for runs on every backend.
#pragma once

#if defined(__CUDACC__)
#define CMDGRAPH_HOST_DEVICE __host__ __device__
#else
#define CMDGRAPH_HOST_DEVICE
#endif
