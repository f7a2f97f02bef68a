// What the samples share: command-line flags, timing, deterministic data, the dense layer two
// samples run and its CPU reference, result checks, and skipping when a GPU is needed.
#pragma once

#include <cmdgraph/cmdgraph.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sample {

/// Exits with 77 (meson's "skipped") when no CUDA device is visible, saying why.
inline void gpu_or_skip(const char* sample_name) {
  if (cmdgraph::Device::count() > 0) return;
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  std::printf("%s needs a CUDA GPU and this process sees none (a build without CUDA, no driver, "
              "or CUDA_VISIBLE_DEVICES='%s'): skipped\n",
              sample_name, visible ? visible : "<unset>");
  std::exit(77);
}

/// The value of `--name N` or `--name=N`, else `fallback`. Exits with a usage line on a value
/// that is not a positive integer.
inline std::size_t flag(int argc, char** argv, std::string_view name, std::size_t fallback) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    const char* value = nullptr;
    if (arg == name && i + 1 < argc) {
      value = argv[i + 1];
    } else if (arg.size() > name.size() && arg.starts_with(name) && arg[name.size()] == '=') {
      value = argv[i] + name.size() + 1;
    }
    if (!value) continue;
    char* end = nullptr;
    const unsigned long long parsed = std::strtoull(value, &end, 10);
    if (end == value || *end != '\0' || parsed == 0) {
      std::fprintf(stderr, "usage: %s [%.*s N] (N a positive integer)\n", argv[0],
                   static_cast<int>(name.size()), name.data());
      std::exit(2);
    }
    return static_cast<std::size_t>(parsed);
  }
  return fallback;
}

/// Wall-clock time on the host since construction.
class Stopwatch {
 public:
  double ms() const {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_)
        .count();
  }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

/// The p-th percentile (0..100) of `values`, nearest rank; 0 for no values.
inline double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * double(values.size())));
  return values[std::clamp<std::size_t>(rank, 1, values.size()) - 1];
}

/// Device time of one launch of `exe` on `queue`: timed events recorded on the queue just
/// before and after it (on the host device, host events do the same).
inline double launch_ms(cmdgraph::Executable& exe, cmdgraph::Queue& queue) {
  cmdgraph::Event start(queue.device(), {.timing = true}), stop(queue.device(), {.timing = true});
  queue.record(start);
  exe.launch(queue);
  queue.record(stop);
  return cmdgraph::Event::elapsed(start, stop).count();
}

/// The fastest of `repeats` timed launches, after one untimed warm-up launch: other work on the
/// GPU only slows a launch down, so the fastest is the least disturbed.
inline double fastest_launch_ms(cmdgraph::Executable& exe, cmdgraph::Queue& queue, int repeats) {
  exe.launch(queue);
  std::vector<double> times;
  for (int i = 0; i < repeats; ++i) times.push_back(launch_ms(exe, queue));
  queue.wait();
  return percentile(times, 0);
}

/// A deterministic pseudo-random value k / 1024 in [0, 1) for index i: exact in float, so sums
/// of many of them are exact in double, and the same on the host and the GPU.
CMDGRAPH_HOST_DEVICE inline float unit_value(std::uint64_t i) {
  std::uint64_t x = i + 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  x ^= x >> 31;
  return static_cast<float>(x >> 54) / 1024.0f;
}

/// One fully connected layer with ReLU, one output per index i = row * outputs + j:
/// out[i] = max(0, bias[j] + sum_k in[row * inputs + k] * weights[k * outputs + j]).
struct DenseRelu {
  const float* in;
  const float* weights;
  const float* bias;
  float* out;
  unsigned inputs;
  unsigned outputs;
  CMDGRAPH_HOST_DEVICE void operator()(std::size_t i) const {
    const std::size_t row = i / outputs;
    const unsigned j = static_cast<unsigned>(i % outputs);
    const float* x = in + row * inputs;
    float sum = bias[j];
    for (unsigned k = 0; k < inputs; ++k) sum += x[k] * weights[k * outputs + j];
    out[i] = sum > 0.0f ? sum : 0.0f;
  }
};

/// A DenseRelu layer's weights: deterministic values made on the host, kept there for the CPU
/// reference, and uploaded to the device the layer runs on.
struct DenseLayer {
  unsigned inputs, outputs;
  std::vector<float> weights, bias;
  cmdgraph::Buffer<float> device_weights, device_bias;

  DenseLayer(cmdgraph::Device device, unsigned inputs_, unsigned outputs_)
      : inputs(inputs_), outputs(outputs_), weights(std::size_t(inputs_) * outputs_),
        bias(outputs_), device_weights(device, weights.size()), device_bias(device, outputs_) {
    for (std::size_t i = 0; i < weights.size(); ++i) weights[i] = unit_value(~i) - 0.5f;
    for (std::size_t j = 0; j < outputs; ++j) bias[j] = 0.25f * unit_value(j);
    cmdgraph::CommandBuffer upload("upload weights");
    upload.copy(device_weights, cmdgraph::host_view(weights.data(), weights.size()),
                weights.size());
    upload.copy(device_bias, cmdgraph::host_view(bias.data(), bias.size()), bias.size());
    cmdgraph::Queue queue(device);
    cmdgraph::compile(upload, device).launch(queue).wait();
  }

  /// The parallel_for functor running the layer on rows of `in` (on the layer's device).
  DenseRelu functor(const float* in, float* out) const {
    return {in, device_weights.data(), device_bias.data(), out, inputs, outputs};
  }

  /// The CPU reference for one row, written plainly and summed in double.
  void reference(const float* in_row, float* out_row) const {
    for (std::size_t j = 0; j < outputs; ++j) {
      double sum = bias[j];
      for (std::size_t k = 0; k < inputs; ++k) sum += double(in_row[k]) * weights[k * outputs + j];
      out_row[j] = static_cast<float>(std::max(sum, 0.0));
    }
  }
};

/// True when |got - want| <= tolerance * max(1, |want|) everywhere; otherwise prints the first
/// few differences of `what` and the count.
inline bool all_close(std::string_view what, std::span<const float> got,
                      std::span<const float> want, double tolerance) {
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double g = got[i], w = want[i];
    if (std::abs(g - w) <= tolerance * std::max(1.0, std::abs(w))) continue;  // false for NaN
    if (++wrong <= 3) {
      std::printf("  %.*s[%zu] = %.7g, expected %.7g\n", static_cast<int>(what.size()),
                  what.data(), i, g, w);
    }
  }
  if (wrong) {
    std::printf("  %.*s: %zu of %zu values wrong\n", static_cast<int>(what.size()), what.data(),
                wrong, want.size());
  }
  return wrong == 0;
}

/// Prints the verdict and returns the process exit code: 0 when `ok`, 1 on a wrong answer.
inline int verdict(const char* sample_name, bool ok) {
  std::printf("%s: %s\n", sample_name, ok ? "results correct" : "WRONG RESULTS");
  return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}

}  // namespace sample
