// Must NOT compile: in a .cu file a parallel_for functor's call operator needs
// CMDGRAPH_HOST_DEVICE, since nvcc also builds the kernel that calls it on the GPU.
#include <cmdgraph/cmdgraph.hpp>

struct HostOnly {
  float* x;
  void operator()(std::size_t i) const { x[i] = 0.0f; }
};

void record(cmdgraph::CommandBuffer& cmd, float* x) { cmd.parallel_for(16, HostOnly{x}); }
