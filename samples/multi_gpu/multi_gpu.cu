// The seed's multi-GPU cooperation: a sum split across every visible GPU, the primary device's
// queue waiting on each device's event, then adding up the partial sums. [--elements N]
#include "sample.hpp"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

using namespace cmdgraph;

namespace {

constexpr std::size_t first_pass_threads = 1 << 18;  // enough to keep every SM's loads in flight
constexpr int trials = 10;

// Element i of the data: unit_value(i), a multiple of 1/1024, so every sum here is exact.
struct Generate {
  float* out;
  std::size_t first;
  __host__ __device__ void operator()(std::size_t i) const {
    out[i] = sample::unit_value(first + i);
  }
};

// out[t] = in[t] + in[t + stride] + in[t + 2 stride] + ... for t < stride. Safe in place
// (in == out): thread t reads only the elements it alone writes.
template <class T>
struct StridedSum {
  const T* in;
  double* out;
  std::size_t n, stride;
  __host__ __device__ void operator()(std::size_t t) const {
    double sum = 0;
    for (std::size_t k = t; k < n; k += stride) sum += in[k];
    out[t] = sum;
  }
};

// Records passes that sum `n` doubles of `values` into values[0], each thread adding at most
// 32 values; returns the last pass.
Command record_sum_in_place(CommandBuffer& cmd, double* values, std::size_t n, Command after) {
  for (std::size_t stride = n; n > 1; n = stride) {
    stride = (n + 31) / 32;
    after = cmd.parallel_for(stride, StridedSum<double>{values, values, n, stride}).after(after);
  }
  return after;
}

// One device's share: its data, scratch, the executable that sums it, and timed events.
struct Share {
  Device device;
  Queue queue;
  Buffer<float> data;
  Buffer<double> partial;
  Executable sum;
  Event start, done;
};

// Generates elements [first, first + count) on `device` and compiles the executable that sums
// them into staging[slot], pinned host memory the primary device reads from.
Share make_share(Device device, std::size_t first, std::size_t count,
                 const HostBuffer<double>& staging, std::size_t slot) {
  Share s{device, Queue(device), Buffer<float>(device, count),
          Buffer<double>(device, std::min(count, first_pass_threads)), {},
          Event(device, {.timing = true}), Event(device, {.timing = true})};
  CommandBuffer generate("generate on " + device.name());
  generate.parallel_for(count, Generate{s.data.data(), first});
  compile(generate, device).launch(s.queue);

  CommandBuffer cmd("partial sum on " + device.name());
  const std::size_t threads = s.partial.size();
  Command pass = cmd.parallel_for(threads, StridedSum<float>{s.data.data(), s.partial.data(),
                                                             count, threads});
  pass = record_sum_in_place(cmd, s.partial.data(), threads, pass);
  // One executable runs on one device, and cmdgraph refuses a copy that touches another
  // device's memory: the partial sum travels through pinned host memory (8 bytes).
  cmd.copy(staging.subview(slot, 1), s.partial, 1).after(pass);
  s.sum = compile(cmd, device);
  return s;
}

struct Run {
  double total_ms;
  std::vector<double> device_ms;
  double sum;
};

// Sums `elements` values split evenly across `devices`, `trials` times; median times.
Run run_on(int devices, std::size_t elements) {
  HostBuffer<double> staging(devices), result(1);
  std::vector<Share> shares;
  for (int d = 0; d < devices; ++d) {
    const std::size_t first = elements * d / devices, last = elements * (d + 1) / devices;
    shares.push_back(make_share(Device::cuda(d), first, last - first, staging, d));
  }
  Share& primary = shares[0];
  Buffer<double> gathered(primary.device, devices);
  CommandBuffer aggregate("aggregate");
  Command gather = aggregate.copy(gathered, staging, devices).named("gather");
  Command total = record_sum_in_place(aggregate, gathered.data(), devices, gather);
  aggregate.copy(result, gathered, 1).after(total).named("result");
  Executable aggregate_exe = compile(aggregate, primary.device);

  Event begin(primary.device, {.timing = true}), end(primary.device, {.timing = true});
  std::vector<std::vector<double>> device_ms(devices);
  std::vector<double> total_ms;
  for (Share& s : shares) s.queue.wait();  // data generated
  for (int trial = 0; trial < trials; ++trial) {
    primary.queue.record(begin);
    for (Share& s : shares) {
      s.queue.wait(begin);  // every device starts when the primary says so
      s.queue.record(s.start);
      s.sum.launch(s.queue);
      s.queue.record(s.done);
      primary.queue.wait(s.done);  // a CUDA event of another device is fine here
    }
    aggregate_exe.launch(primary.queue);
    primary.queue.record(end);
    primary.queue.wait();
    total_ms.push_back(Event::elapsed(begin, end).count());
    for (int d = 0; d < devices; ++d) {
      device_ms[d].push_back(Event::elapsed(shares[d].start, shares[d].done).count());
    }
  }
  Run run{sample::percentile(total_ms, 50), {}, result[0]};
  for (const auto& times : device_ms) run.device_ms.push_back(sample::percentile(times, 50));
  return run;
}

void print(const std::string& label, const Run& run) {
  std::printf("  %-8s total %.3f ms; per device:", label.c_str(), run.total_ms);
  for (std::size_t d = 0; d < run.device_ms.size(); ++d) {
    std::printf(" cuda:%zu %.3f ms", d, run.device_ms[d]);
  }
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  sample::gpu_or_skip("multi_gpu");
  const std::size_t elements = sample::flag(argc, argv, "--elements", std::size_t{1} << 29);
  const int devices = Device::count();
  std::printf("multi_gpu: sum of %zu floats (%.2f GiB) on %d GPU(s), %s\n", elements,
              double(elements) * sizeof(float) / double(1 << 30), devices,
              Device::cuda(0).properties().name.c_str());

  double reference = 0;  // exact: every value and partial sum is a multiple of 1/1024
  for (std::size_t i = 0; i < elements; ++i) reference += sample::unit_value(i);

  const Run one = run_on(1, elements);
  print("1 GPU:", one);
  bool ok = one.sum == reference;
  if (devices > 1) {
    const Run all = run_on(devices, elements);
    print(std::to_string(devices) + " GPUs:", all);
    std::printf("  speed-up over one GPU: %.2fx\n", one.total_ms / all.total_ms);
    ok &= all.sum == reference;
  } else {
    std::printf("  one GPU visible: no speed-up to measure\n");
  }
  std::printf("  sum %.1f, CPU reference %.1f\n", one.sum, reference);
  return sample::verdict("multi_gpu", ok);
}
