// Must NOT compile, with or without --extended-lambda: a __host__ __device__ lambda as a
// parallel_for functor. Without the flag nvcc refuses the annotation; with it, nvcc wraps the
// lambda in a type that is not trivially copyable, which parallel_for requires.
#include <cmdgraph/cmdgraph.hpp>

void record(cmdgraph::CommandBuffer& cmd, float* x) {
  cmd.parallel_for(16, [=] __host__ __device__(std::size_t i) { x[i] = 0.0f; });
}
