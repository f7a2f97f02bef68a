// Transient memory (issue 15, item 2): peak device memory and launch time of a pipeline whose
// intermediates are transients (CommandBuffer::alloc/free) against the same pipeline keeping
// every intermediate alive in its own Buffer, on both CUDA backends, beside the same work by
// hand in the same process, alternating trials: a graph captured with cudaMallocAsync and
// cudaFreeAsync (CUDA's memory nodes), a graph over kept buffers, and stream launches that
// allocate and free every intermediate at every launch (the design the streams backend's
// arena replaces).
#include "bench_support.cuh"

#include <cmdgraph/cmdgraph.hpp>

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

using namespace cmdgraph;

namespace {

constexpr int stages = 8;
constexpr std::size_t n = std::size_t{16} << 20;  // floats: 64 MiB an intermediate
constexpr std::size_t bytes = n * sizeof(float);
constexpr int trials = 15;

__global__ void stage(const float* in, float* out, std::size_t count) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < count;
       i += std::size_t{gridDim.x} * blockDim.x) {
    out[i] = in[i] * 0.5f + 1.0f;
  }
}

dim3 grid_of(Device gpu) {
  return dim3(static_cast<unsigned>(gpu.properties().multiprocessors) * 8);
}

void run_stage(dim3 grid, const float* in, float* out, cudaStream_t s) {
  stage<<<grid, 256, 0, s>>>(in, out, n);
  BENCH_CUDA(cudaGetLastError());
}

// Stage k reads intermediate k - 1 and writes intermediate k; the last writes `output`. With
// allocations in stream order, intermediate k is allocated after k - 2 is freed: two alive at
// once.
void enqueue_by_hand(dim3 grid, const float* input, float* output, cudaStream_t s,
                     std::vector<float*>* kept) {
  const float* previous = input;
  std::vector<float*> mine(stages - 1, nullptr);
  for (int k = 0; k < stages; ++k) {
    float* out = output;
    if (k + 1 < stages) {
      if (kept) {
        out = (*kept)[k];
      } else {
        BENCH_CUDA(cudaMallocAsync(reinterpret_cast<void**>(&mine[k]), bytes, s));
        out = mine[k];
      }
    }
    run_stage(grid, previous, out, s);
    if (!kept && k > 0) BENCH_CUDA(cudaFreeAsync(const_cast<float*>(previous), s));
    previous = out;
  }
}

cudaGraphExec_t captured(dim3 grid, const float* input, float* output, cudaStream_t s,
                         std::vector<float*>* kept) {
  return bench::captured(s, [&] { enqueue_by_hand(grid, input, output, s, kept); });
}

// The same pipeline recorded: intermediates as transients, or in `kept` buffers.
Executable ours(Device gpu, const float* input, float* output, Backend backend,
                const std::vector<Buffer<float>>* kept) {
  const dim3 grid = grid_of(gpu);
  CommandBuffer cmd(kept ? "kept" : "transient");
  std::vector<Transient<float>> intermediates;
  std::vector<Command> frees;  // frees[j]: intermediate j's, once stage j + 1 read it
  KernelCommand<const float*, float*, std::size_t> last;
  const float* in = input;
  for (int k = 0; k < stages; ++k) {
    float* out = output;
    Transient<float> t;
    if (k + 1 < stages) {
      if (kept) {
        out = (*kept)[k].data();
      } else {
        t = cmd.alloc<float>(n);
        if (k >= 2) t.after(frees[k - 2]);  // two alive at once, as in stream order by hand
        out = t.data();
      }
    }
    auto s = cmd.launch(&stage, LaunchConfig{{grid.x}, {256}}, in, out, n);
    if (k > 0) s.after(last);
    if (t.valid()) s.after(t);
    if (!kept && k > 0) frees.push_back(cmd.free(intermediates[k - 1]).after(s));
    intermediates.push_back(t);
    last = s;
    in = out;
  }
  return compile(cmd, gpu, {.backend = backend});
}

std::uint64_t graph_memory(Device gpu, cudaGraphMemAttributeType attribute) {
  std::uint64_t value = 0;
  BENCH_CUDA(cudaDeviceGetGraphMemAttribute(gpu.ordinal(), attribute, &value));
  return value;
}

std::uint64_t pool_memory(Device gpu, cudaMemPoolAttr attribute) {
  cudaMemPool_t pool;
  BENCH_CUDA(cudaDeviceGetDefaultMemPool(&pool, gpu.ordinal()));
  std::uint64_t value = 0;
  BENCH_CUDA(cudaMemPoolGetAttribute(pool, attribute, &value));
  return value;
}

void reset_peaks(Device gpu) {
  BENCH_CUDA(cudaDeviceSynchronize());
  BENCH_CUDA(cudaDeviceGraphMemTrim(gpu.ordinal()));
  std::uint64_t zero = 0;
  BENCH_CUDA(cudaDeviceSetGraphMemAttribute(gpu.ordinal(), cudaGraphMemAttrUsedMemHigh, &zero));
  BENCH_CUDA(cudaDeviceSetGraphMemAttribute(gpu.ordinal(), cudaGraphMemAttrReservedMemHigh, &zero));
  cudaMemPool_t pool;
  BENCH_CUDA(cudaDeviceGetDefaultMemPool(&pool, gpu.ordinal()));
  BENCH_CUDA(cudaMemPoolTrimTo(pool, 0));
  BENCH_CUDA(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReservedMemHigh, &zero));
  BENCH_CUDA(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &zero));
}

double mib(std::uint64_t b) { return static_cast<double>(b) / (1 << 20); }

// Checks the output of one launch: every stage maps x to x / 2 + 1, starting from 0.
bool right(const float* output) {
  std::vector<float> host(n);
  BENCH_CUDA(cudaMemcpy(host.data(), output, bytes, cudaMemcpyDeviceToHost));
  float want = 0;
  for (int k = 0; k < stages; ++k) want = want * 0.5f + 1.0f;
  for (std::size_t i = 0; i < n; i += 4099) {
    if (host[i] != want) return false;
  }
  return true;
}

}  // namespace

int main() {
  if (bench::no_gpu("bench_memory")) return 0;
  const Device gpu = Device::cuda(0);
  BENCH_CUDA(cudaSetDevice(gpu.ordinal()));
  const dim3 grid = grid_of(gpu);
  Queue queue(gpu);
  cudaStream_t s = queue.native_handle();
  Buffer<float> input(gpu, n), output(gpu, n);
  BENCH_CUDA(cudaMemset(input.data(), 0, bytes));
  std::vector<Buffer<float>> kept;
  std::vector<float*> kept_raw;
  for (int k = 0; k + 1 < stages; ++k) {
    kept.emplace_back(gpu, n);
    kept_raw.push_back(kept.back().data());
  }
  std::printf("bench_memory: %d stages, intermediates of %.0f MiB (%d of them), medians of %d "
              "trials\n", stages, mib(bytes), stages - 1, trials);

  // ---- Peak memory of one launch ----
  std::printf("\n== peak device memory of the intermediates (MiB)\n");
  std::printf("%-60s %10.0f\n", "every intermediate kept alive (Buffer each)",
              mib(bytes * (stages - 1)));
  struct Peak {
    const char* what;
    double mib;
  };
  std::vector<Peak> peaks;
  {
    reset_peaks(gpu);
    cudaGraphExec_t raw = captured(grid, input.data(), output.data(), s, nullptr);
    BENCH_CUDA(cudaGraphLaunch(raw, s));
    BENCH_CUDA(cudaStreamSynchronize(s));
    if (!right(output.data())) return std::printf("raw graph: wrong output\n"), 1;
    peaks.push_back({"raw graph with memory nodes (graph pool used high)",
                     mib(graph_memory(gpu, cudaGraphMemAttrUsedMemHigh))});
    BENCH_CUDA(cudaGraphExecDestroy(raw));
  }
  {
    reset_peaks(gpu);
    Executable exe = ours(gpu, input.data(), output.data(), Backend::cuda_graph, nullptr);
    exe.launch(queue).wait();
    if (!right(output.data())) return std::printf("cmdgraph graph: wrong output\n"), 1;
    peaks.push_back({"cmdgraph graph, transients (graph pool used high)",
                     mib(graph_memory(gpu, cudaGraphMemAttrUsedMemHigh))});
    peaks.push_back({"cmdgraph graph, transients (graph pool reserved high)",
                     mib(graph_memory(gpu, cudaGraphMemAttrReservedMemHigh))});
  }
  {
    reset_peaks(gpu);
    Executable exe = ours(gpu, input.data(), output.data(), Backend::streams, nullptr);
    exe.launch(queue).wait();
    if (!right(output.data())) return std::printf("cmdgraph streams: wrong output\n"), 1;
    peaks.push_back({"cmdgraph streams, transients (its arena)",
                     mib(exe.stats().transient_bytes)});
    peaks.push_back({"cmdgraph streams, transients (default pool used high)",
                     mib(pool_memory(gpu, cudaMemPoolAttrUsedMemHigh))});
  }
  {
    reset_peaks(gpu);
    enqueue_by_hand(grid, input.data(), output.data(), s, nullptr);
    BENCH_CUDA(cudaStreamSynchronize(s));
    if (!right(output.data())) return std::printf("raw streams: wrong output\n"), 1;
    peaks.push_back({"raw stream, cudaMallocAsync per launch (pool used high)",
                     mib(pool_memory(gpu, cudaMemPoolAttrUsedMemHigh))});
  }
  for (const Peak& p : peaks) {
    std::printf("%-60s %10.0f  (%.2fx of kept)\n", p.what, p.mib,
                p.mib / mib(bytes * (stages - 1)));
  }

  // ---- Launch time ----
  // The per-launch allocations by hand keep their memory in the pool between launches, as a
  // careful hand would set it.
  cudaMemPool_t pool;
  BENCH_CUDA(cudaDeviceGetDefaultMemPool(&pool, gpu.ordinal()));
  std::uint64_t keep_all = UINT64_MAX;
  BENCH_CUDA(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_all));
  cudaGraphExec_t raw_transient = captured(grid, input.data(), output.data(), s, nullptr);
  cudaGraphExec_t raw_kept = captured(grid, input.data(), output.data(), s, &kept_raw);
  Executable graph_transient = ours(gpu, input.data(), output.data(), Backend::cuda_graph, nullptr);
  Executable graph_kept = ours(gpu, input.data(), output.data(), Backend::cuda_graph, &kept);
  Executable streams_transient = ours(gpu, input.data(), output.data(), Backend::streams, nullptr);
  Executable streams_kept = ours(gpu, input.data(), output.data(), Backend::streams, &kept);
  constexpr int kinds = 8;
  std::vector<double> device[kinds], host[kinds];
  auto measure = [&](int i, bool record, const std::function<void()>& fn) {
    double h = 0;
    const double d = bench::device_us(s, [&] { h = bench::host_us(fn); });
    if (record) {
      device[i].push_back(d);
      host[i].push_back(h);
    }
  };
  for (int trial = 0; trial < trials + 1; ++trial) {  // the first is a warm-up
    const bool record = trial > 0;
    measure(0, record, [&] { BENCH_CUDA(cudaGraphLaunch(raw_transient, s)); });
    measure(1, record, [&] { graph_transient.launch(queue); });
    measure(2, record, [&] { BENCH_CUDA(cudaGraphLaunch(raw_kept, s)); });
    measure(3, record, [&] { graph_kept.launch(queue); });
    measure(4, record, [&] { enqueue_by_hand(grid, input.data(), output.data(), s, nullptr); });
    measure(5, record, [&] { streams_transient.launch(queue); });
    measure(6, record, [&] { enqueue_by_hand(grid, input.data(), output.data(), s, &kept_raw); });
    measure(7, record, [&] { streams_kept.launch(queue); });
  }
  queue.wait();
  if (!right(output.data())) return std::printf("wrong output after the trials\n"), 1;
  const char* names[kinds / 2] = {"graph, transients (memory nodes)", "graph, kept buffers",
                                  "streams, transients (raw: malloc/free per launch)",
                                  "streams, kept buffers"};
  bench::header("device time per launch");
  for (int i = 0; i < kinds / 2; ++i) {
    bench::row(names[i], bench::median(device[2 * i]), bench::median(device[2 * i + 1]), "us", "");
  }
  bench::header("host time per launch call");
  for (int i = 0; i < kinds / 2; ++i) {
    bench::row(names[i], bench::median(host[2 * i]), bench::median(host[2 * i + 1]), "us", "");
  }
  std::printf("\ncmdgraph transients against kept buffers, device time: graph %.3fx, streams "
              "%.3fx\n", bench::median(device[1]) / bench::median(device[3]),
              bench::median(device[5]) / bench::median(device[7]));
  BENCH_CUDA(cudaGraphExecDestroy(raw_transient));
  BENCH_CUDA(cudaGraphExecDestroy(raw_kept));
  return 0;
}
