// The seed's multi-GPU cooperation: one job split across every visible GPU, each device with
// its own queue, executable and events; each device copies its partial sum straight into the
// primary device's memory (a peer-to-peer copy), and the primary's executable waits on every
// device's event before it adds them up. Two jobs show both kinds of scaling:
//  - memory-bound: the sum of 2 GiB of floats, read once;
//  - compute-bound: the sum of 16 Mi pseudo-random walks of 8,192 dependent steps each.
// [--elements N] [--walks N] [--steps N]
#include "sample.hpp"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

using namespace cmdgraph;

namespace {

constexpr std::size_t first_pass_threads = 1 << 18;  // enough to keep every SM busy
constexpr int trials = 10;

// Element i of the memory-bound job: unit_value(i), a multiple of 1/1024, so every sum here
// is exact.
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

// Element i of the compute-bound job: `steps` steps x -> a x + c (mod 2^32) of a linear
// congruential generator from a start that depends on i, each step needing the one before; the
// value is the top 10 bits of where the walk ends, an integer, so sums are exact in double.
constexpr std::uint32_t walk_a = 1664525u, walk_c = 1013904223u;
__host__ __device__ inline std::uint32_t walk_start(std::uint64_t i) {
  return static_cast<std::uint32_t>(i * 0x9E3779B9ull + 1);
}

// out[t] = the sum of the walks t, t + stride, ... of elements [first, first + n). `a` and `c`
// arrive at run time: were they constants, the compiler would fold four steps into one.
struct StridedWalkSum {
  std::uint64_t first;
  double* out;
  std::size_t n, stride;
  unsigned steps;
  std::uint32_t a, c;
  __host__ __device__ void operator()(std::size_t t) const {
    double sum = 0;
    for (std::size_t k = t; k < n; k += stride) {
      std::uint32_t x = walk_start(first + k);
      for (unsigned s = 0; s < steps; ++s) x = x * a + c;
      sum += x >> 22;
    }
    out[t] = sum;
  }
};

// The CPU reference of the walks, in O(1) per element: `steps` steps of x -> a x + c are one
// step of x -> A x + C, with A and C composed once.
double walks_reference(std::size_t elements, unsigned steps) {
  std::uint32_t a = 1, c = 0;
  for (unsigned s = 0; s < steps; ++s) {
    a *= walk_a;
    c = c * walk_a + walk_c;
  }
  double sum = 0;
  for (std::size_t i = 0; i < elements; ++i) sum += (a * walk_start(i) + c) >> 22;
  return sum;
}

enum class Job { memory, compute };

struct JobSize {
  Job job;
  std::size_t elements;
  unsigned steps;  // compute-bound job only
};

// Records passes that sum `n` doubles of `values` into values[0], each thread adding at most
// 32 values, after `after` (when it is valid); returns the last command recorded, or `after`.
Command record_sum_in_place(CommandBuffer& cmd, double* values, std::size_t n, Command after) {
  for (std::size_t stride = n; n > 1; n = stride) {
    stride = (n + 31) / 32;
    Command pass = cmd.parallel_for(stride, StridedSum<double>{values, values, n, stride});
    if (after.valid()) pass.after(after);
    after = pass;
  }
  return after;
}

// One device's share of a job: its memory, the executable that sums its elements, its events.
struct Share {
  Device device;
  Queue queue;
  Buffer<float> data;  // memory-bound job only
  Buffer<double> partial;
  Executable sum;
  Event start, done;
};

// Prepares elements [first, first + count) of `size.job` on `device` and compiles the
// executable that sums them into gathered[slot], on the primary device.
Share make_share(Device device, const JobSize& size, std::size_t first, std::size_t count,
                 const Buffer<double>& gathered, std::size_t slot) {
  const bool memory = size.job == Job::memory;
  Share s{device, Queue(device), memory ? Buffer<float>(device, count) : Buffer<float>(),
          Buffer<double>(device, std::min(count, first_pass_threads)), {},
          Event(device, {.timing = true}), Event(device, {.timing = true})};
  if (memory) {
    CommandBuffer generate("generate on " + device.name());
    generate.parallel_for(count, Generate{s.data.data(), first});
    compile(generate, device).launch(s.queue);
  }

  CommandBuffer cmd("partial sum on " + device.name());
  const std::size_t threads = s.partial.size();
  Command pass;
  if (memory) {
    pass = cmd.parallel_for(threads, StridedSum<float>{s.data.data(), s.partial.data(), count,
                                                       threads});
  } else {
    pass = cmd.parallel_for(threads, StridedWalkSum{first, s.partial.data(), count, threads,
                                                    size.steps, walk_a, walk_c});
  }
  pass = record_sum_in_place(cmd, s.partial.data(), threads, pass);
  // A copy may reach another device's memory: the partial sum goes straight to the primary.
  cmd.copy(gathered.subview(slot, 1), s.partial, 1).after(pass);
  s.sum = compile(cmd, device);
  return s;
}

struct Run {
  double total_ms;
  std::vector<double> device_ms;
  double sum;
};

// Runs the job split evenly across `devices`, `trials` times; median times.
Run run_on(int devices, const JobSize& size) {
  const Device primary_device = Device::cuda(0);
  Buffer<double> gathered(primary_device, devices);
  HostBuffer<double> result(1);
  std::vector<Share> shares;
  for (int d = 0; d < devices; ++d) {
    const std::size_t first = size.elements * d / devices;
    const std::size_t last = size.elements * (d + 1) / devices;
    shares.push_back(make_share(Device::cuda(d), size, first, last - first, gathered, d));
  }
  Share& primary = shares[0];
  // The primary device's work: wait for every device's event (a CUDA event of another device
  // is fine to wait for), then add up what they copied into `gathered`.
  CommandBuffer aggregate("aggregate");
  for (Share& s : shares) aggregate.wait(s.done).named("wait for " + s.device.name());
  aggregate.barrier();  // what follows waits for every device
  record_sum_in_place(aggregate, gathered.data(), devices, Command{});
  aggregate.barrier();
  aggregate.copy(result, gathered, 1).named("result");
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
  std::printf("    %-8s total %.3f ms; per device:", label.c_str(), run.total_ms);
  for (std::size_t d = 0; d < run.device_ms.size(); ++d) {
    std::printf(" cuda:%zu %.3f ms", d, run.device_ms[d]);
  }
  std::printf("\n");
}

// Runs the job on one GPU and on all of them; true when every sum equals `reference`.
bool scale(const JobSize& size, double reference, int devices) {
  const Run one = run_on(1, size);
  print("1 GPU:", one);
  bool ok = one.sum == reference;
  if (devices > 1) {
    const Run all = run_on(devices, size);
    print(std::to_string(devices) + " GPUs:", all);
    std::printf("    speed-up over one GPU: %.2fx\n", one.total_ms / all.total_ms);
    ok &= all.sum == reference;
  } else {
    std::printf("    one GPU visible: no speed-up to measure\n");
  }
  std::printf("    sum %.1f, CPU reference %.1f\n", one.sum, reference);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  sample::gpu_or_skip("multi_gpu");
  const std::size_t elements = sample::flag(argc, argv, "--elements", std::size_t{1} << 29);
  const std::size_t walks = sample::flag(argc, argv, "--walks", std::size_t{1} << 24);
  const auto steps = static_cast<unsigned>(sample::flag(argc, argv, "--steps", 8192));
  const int devices = Device::count();
  std::printf("multi_gpu: %d GPU(s), %s\n", devices, Device::cuda(0).properties().name.c_str());

  std::printf("  memory-bound: sum of %zu floats (%.2f GiB)\n", elements,
              double(elements) * sizeof(float) / double(1 << 30));
  double reference = 0;  // exact: every value and partial sum is a multiple of 1/1024
  for (std::size_t i = 0; i < elements; ++i) reference += sample::unit_value(i);
  bool ok = scale({Job::memory, elements, 0}, reference, devices);

  std::printf("  compute-bound: sum of %zu walks of %u steps\n", walks, steps);
  ok &= scale({Job::compute, walks, steps}, walks_reference(walks, steps), devices);
  return sample::verdict("multi_gpu", ok);
}
