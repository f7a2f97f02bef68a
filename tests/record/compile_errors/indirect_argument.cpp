// launch_indirect checks its arguments as launch() does: argument 1 is an int* for a float*.
// expect: I = 1; P = float\*; A = int
#include <cmdgraph/cmdgraph.hpp>

void scale(float, float*) {}

int main() {
  cmdgraph::CommandBuffer cmd("indirect");
  cmdgraph::HostBuffer<cmdgraph::DispatchSize> grid(1);
  int wrong[4]{};
  cmd.launch_indirect(&scale, grid, cmdgraph::LaunchConfig{{8}, {32}}, 2.0f, wrong);
}
