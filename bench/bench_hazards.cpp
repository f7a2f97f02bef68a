// bench_hazards: what declared access costs on the host backend (bench/hazard_programs.hpp):
// each command a parallel_for of one empty step, so the figures are the CPU cost of recording
// and compiling. Usage: bench_hazards [--nearby] [--only CONFIG] [commands...]
#include "hazard_programs.hpp"

namespace {
struct Nop {
  void operator()(std::size_t) const {}
};
}  // namespace

int main(int argc, char** argv) {
  using namespace cmdgraph;
  return hazard_bench::bench_main(argc, argv, Device::host(), {},
                                  [](CommandBuffer& cmd) { return cmd.parallel_for(1, Nop{}); });
}
