// Argument 2 (from 0) is a const char* for a const float* parameter.
// expect: I = 2; P = const float\*; A = const char
#include <cmdgraph/cmdgraph.hpp>

void saxpy(int, float, const float*, float*) {}

int main() {
  cmdgraph::CommandBuffer cmd("wrong");
  float y[4]{};
  cmd.launch(&saxpy, cmdgraph::LaunchConfig{{1}, {4}}, 4, 2.0f, "x", y);
}
