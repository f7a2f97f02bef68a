// Declared access catching a missing edge: a blur reads what a fill wrote, but the edge between
// them was forgotten. compile() refuses the program with the hazard named, then the edge is
// added (or inferred) and it runs. On the GPU or the host backend. [--elements N]
#include "sample.hpp"

#include <cstdio>

using namespace cmdgraph;

namespace {

// out[i] = the mean of in[i - 1], in[i], in[i + 1] (clamped at the ends).
struct Blur {
  const float* in;
  float* out;
  std::size_t n;
  CMDGRAPH_HOST_DEVICE void operator()(std::size_t i) const {
    const std::size_t left = i > 0 ? i - 1 : i, right = i + 1 < n ? i + 1 : i;
    out[i] = (in[left] + in[i] + in[right]) / 3.0f;
  }
};

// Fill `image`, blur it into `blurred`, copy that out. With `edge`, the blur waits for the fill;
// the copy always waits for the blur.
CommandBuffer record(const Buffer<float>& image, const Buffer<float>& blurred,
                     const HostBuffer<float>& result, bool edge) {
  const std::size_t n = image.size();
  CommandBuffer cmd("blur");
  Command fill = cmd.fill(image, 3.0f, n).named("fill image");
  Command blur = cmd.parallel_for(n, Blur{image.data(), blurred.data(), n})
                     .named("blur")
                     .reads(image, "image")
                     .writes(blurred, "blurred");
  if (edge) blur.after(fill);
  cmd.copy(result, blurred, n).named("copy out").after(blur);
  return cmd;
}

}  // namespace

int main(int argc, char** argv) {
  const Device device = Device::best();
  const std::size_t n = sample::flag(argc, argv, "--elements", 1 << 20);
  Buffer<float> image(device, n), blurred(device, n);
  HostBuffer<float> result(n);
  Queue queue(device);
  std::printf("hazards: a blur of %zu floats on %s (%s)\n", n, device.name().c_str(),
              device.properties().name.c_str());

  // 1. The edge is missing: compile() names both commands, the memory and the hazard.
  bool refused = false;
  {
    CommandBuffer cmd = record(image, blurred, result, false);
    try {
      compile(cmd, device);
    } catch (const Error& e) {
      refused = e.code() == errc::hazard;
      std::printf("without the edge, compile() refuses:\n%s\n", e.what());
    }
  }

  // 2. With the edge it compiles and runs; and with none written, inference finds it.
  bool ok = refused;
  for (bool infer : {false, true}) {
    CommandBuffer cmd = record(image, blurred, result, !infer);
    Executable exe = compile(cmd, device, {.hazards = infer ? Hazards::infer : Hazards::validate});
    std::fill(result.begin(), result.end(), -1.0f);
    exe.launch(queue).wait();
    bool right = true;
    for (std::size_t i = 0; i < n; ++i) right &= result[i] == 3.0f;
    std::printf("%s: conflicting pairs checked %zu, edges inferred %zu, result %s\n",
                infer ? "inferred" : "with the edge", exe.stats().pairs_validated,
                exe.stats().edges_inferred, right ? "right" : "wrong");
    ok &= right;
  }
  return sample::verdict("hazards", ok);
}
