// Must NOT compile (with --extended-lambda): a __device__ lambda as a parallel_for functor;
// parallel_for requires a functor the host can call.
#include <cmdgraph/cmdgraph.hpp>

void record(cmdgraph::CommandBuffer& cmd, float* x) {
  cmd.parallel_for(16, [=] __device__(std::size_t i) { x[i] = 0.0f; });
}
