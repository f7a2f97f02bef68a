// Looking at an executable instead of reading it: profile a small pipeline, write a Chrome
// trace (open trace.json in https://ui.perfetto.dev or chrome://tracing) and a Graphviz picture
// (graph.dot, rendered to graph.png when Graphviz's `dot` is installed). GPU or host backend.
// [--out DIR]
#include "sample.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

using namespace cmdgraph;

namespace {

struct Scale {
  const float* in;
  float* out;
  float factor;
  CMDGRAPH_HOST_DEVICE void operator()(std::size_t i) const { out[i] = in[i] * factor; }
};

struct Sum2 {
  const float* a;
  const float* b;
  float* out;
  CMDGRAPH_HOST_DEVICE void operator()(std::size_t i) const { out[i] = a[i] + b[i]; }
};

std::string out_dir(int argc, char** argv) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::string_view(argv[i]) == "--out") return argv[i + 1];
  }
  return ".";
}

}  // namespace

int main(int argc, char** argv) {
  const Device device = Device::best();
  const std::size_t n = device.is_cuda() ? 1 << 24 : 1 << 20;
  Buffer<float> in(device, n), left(device, n), right(device, n), sum(device, n);
  HostBuffer<float> staged(n), result(n);
  for (std::size_t i = 0; i < n; ++i) staged[i] = static_cast<float>(i % 1000);

  // A diamond: upload, two independent transforms, a join, a download.
  CommandBuffer cmd("observed pipeline");
  auto up = cmd.copy(in, staged, n).named("upload");
  auto l = cmd.parallel_for(n, Scale{in.data(), left.data(), 2.0f}).after(up).named("double");
  auto r = cmd.parallel_for(n, Scale{in.data(), right.data(), 3.0f}).after(up).named("triple");
  auto s = cmd.parallel_for(n, Sum2{left.data(), right.data(), sum.data()}).after(l, r).named("sum");
  cmd.copy(result, sum, n).after(s, up).named("download");  // the edge from upload is redundant

  // Profile mode records when each command starts and ends, at every launch.
  Executable exe = compile(cmd, device, {.profile = true});
  Queue queue(device);
  std::vector<Profile> launches;
  for (int i = 0; i < 3; ++i) {
    exe.launch(queue).wait();
    launches.push_back(exe.last_profile());
  }

  const std::string dir = out_dir(argc, argv);
  Profile::write_trace(dir + "/trace.json", launches);
  exe.write_dot(dir + "/graph.dot", {.removed_edges = true});
  std::printf("%s on %s: %zu commands, %zu edges after reduction (of %zu)\n",
              exe.name().c_str(), to_string(exe.backend()), exe.stats().commands,
              exe.stats().edges_reduced, exe.stats().edges_recorded);
  for (const CommandTiming& c : launches.back().commands) {
    std::printf("  %-10s lane %u  %8.3f .. %8.3f ms\n", c.name.c_str(), c.lane, c.start_ms,
                c.end_ms);
  }
  std::printf("wrote %s/trace.json (3 launches) and %s/graph.dot\n", dir.c_str(), dir.c_str());
  const std::string render = "dot -Tpng '" + dir + "/graph.dot' -o '" + dir + "/graph.png'";
  if (std::system("command -v dot >/dev/null 2>&1") == 0 && std::system(render.c_str()) == 0) {
    std::printf("rendered %s/graph.png\n", dir.c_str());
  }

  std::size_t wrong = 0;
  for (std::size_t i = 0; i < n; ++i) wrong += result[i] != 5.0f * staged[i];
  std::printf("%zu of %zu results wrong -> %s\n", wrong, n, wrong == 0 ? "OK" : "FAILED");
  return wrong == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
