// A floating-point argument for an integer parameter would drop its fraction: argument 0.
// expect: I = 0; P = int; A = double
#include <cmdgraph/cmdgraph.hpp>

void takes_int(int) {}

int main() {
  cmdgraph::CommandBuffer cmd("narrowing");
  cmd.launch(&takes_int, {{1}, {1}}, 3.9);
}
