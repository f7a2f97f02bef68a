// A language model's decoding loop, one token per frame, the frame recorded again every step as
// an engine records it: the embedding of the last token, `layers` transformer layers (a GEMV
// for q, k and v; the new k and v appended to the KV cache; attention over the cache, one
// kernel per chunk of 64 positions and a kernel combining them; the output GEMV; a two-GEMV
// MLP; residual adds), the logits and a greedy sample, all on the GPU. The KV length grows by
// one a step, so a few kernels get new arguments each step; every 64 steps attention needs one
// chunk more, and the frame's structure changes.
//
// Four ways to run the same kernels, each decoding the same tokens:
//  - cmdgraph: record the frame, take its executable from an ExecutableCache (a hit updates
//    the changed commands in place; a new structure compiles), launch. Every kernel is
//    update-free, so the kernels given new arguments get them on the device, with the launch,
//    not through a CUDA call each;
//  - a stream: launch every kernel on a CUDA stream each step (no graph);
//  - capture: capture the stream again each step and cudaGraphExecUpdate the executable graph
//    (instantiating again when the update refuses a new structure), launch it;
//  - compile: record and compile() every step, launch.
// Per step it prints the host time of the frame (record + update + launch, or what stands for
// them) for each way, and at the end tokens/s and the cache's hits. The chunks of a layer
// are independent commands in cmdgraph's frame and serial on the stream (and in its capture):
// host times compare the same kernels, the GPU may overlap the chunks only in cmdgraph's frame.
// The tokens of every way must be equal, each one the best token of a CPU reference fed the
// same prefix, and the last step's logits equal to the reference's. [--steps N] [--layers L]
#include "sample.hpp"

#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

using namespace cmdgraph;

namespace {

#define SAMPLE_CUDA(call)                                                                     \
  do {                                                                                        \
    const cudaError_t status_ = (call);                                                       \
    if (status_ != cudaSuccess) {                                                             \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,                      \
                   cudaGetErrorString(status_));                                              \
      std::exit(EXIT_FAILURE);                                                                \
    }                                                                                         \
  } while (0)

constexpr int model = 256, head_dim = 64, heads = model / head_dim, hidden = 4 * model;
constexpr int vocabulary = 4096, chunk = 64, start_token = 1;
constexpr int gemv_rows_per_block = 8;  // one warp a row

// ---- kernels -------------------------------------------------------------------------------

// x = the embedding of the token decoded last (tokens[step]).
__global__ void embed(const float* table, const int* tokens, int step, float* x) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < model) x[i] = table[std::size_t(tokens[step]) * model + i];
}

// y = W x (+ residual) (ReLU when relu): one warp a row of the row-major `rows` x `cols` W.
__global__ void gemv(const float* w, const float* x, const float* residual, float* y, int rows,
                     int cols, int relu) {
  const int row = blockIdx.x * gemv_rows_per_block + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  float sum = 0;
  for (int k = lane; k < cols; k += 32) sum += w[std::size_t(row) * cols + k] * x[k];
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(~0u, sum, offset);
  if (lane != 0) return;
  if (relu) sum = fmaxf(sum, 0.0f);
  if (residual) sum += residual[row];
  y[row] = sum;
}

// The new position's k and v (the second and third thirds of qkv) into the layer's cache.
__global__ void append_kv(const float* qkv, float* keys, float* values, int position) {
  const int i = threadIdx.x;
  keys[std::size_t(position) * model + i] = qkv[model + i];
  values[std::size_t(position) * model + i] = qkv[2 * model + i];
}

// Attention of every head (a block each) over positions [begin, end) of one chunk: the
// scores' maximum, the sum of their exponentials and the weighted values, kept apart per chunk
// in `partial` so the chunks can run in any order and `combine` joins them.
constexpr int partial_size = 2 + head_dim;  // max, sum, head_dim weighted values
__global__ void attend_chunk(const float* qkv, const float* keys, const float* values,
                             int begin, int end, float* partial, int chunk_index) {
  __shared__ float weight[chunk];
  const int h = blockIdx.x, j = threadIdx.x;
  const int position = begin + j;
  float score = -INFINITY;
  if (position < end) {
    score = 0;
    const float* k = keys + std::size_t(position) * model + h * head_dim;
    for (int d = 0; d < head_dim; ++d) score += qkv[h * head_dim + d] * k[d];
    score *= rsqrtf(float(head_dim));
  }
  weight[j] = score;
  __syncthreads();
  float most = -INFINITY;
  for (int i = 0; i < chunk; ++i) most = fmaxf(most, weight[i]);
  __syncthreads();
  weight[j] = position < end ? expf(score - most) : 0.0f;
  __syncthreads();
  float sum = 0, weighted = 0;
  for (int i = 0; i < end - begin; ++i) {
    sum += weight[i];
    weighted += weight[i] * values[std::size_t(begin + i) * model + h * head_dim + j];
  }
  float* out = partial + (std::size_t(chunk_index) * heads + h) * partial_size;
  if (j == 0) {
    out[0] = most;
    out[1] = sum;
  }
  out[2 + j] = weighted;
}

// Joins the chunks of every head: attention = sum_c e^(max_c - max) weighted_c / sum.
__global__ void combine(const float* partial, int chunks, float* attention) {
  const int h = blockIdx.x, j = threadIdx.x;
  float most = -INFINITY;
  for (int c = 0; c < chunks; ++c) most = fmaxf(most, partial[(c * heads + h) * partial_size]);
  float sum = 0, weighted = 0;
  for (int c = 0; c < chunks; ++c) {
    const float* p = partial + (c * heads + h) * partial_size;
    const float scale = expf(p[0] - most);
    sum += p[1] * scale;
    weighted += p[2 + j] * scale;
  }
  attention[h * head_dim + j] = weighted / sum;
}

// tokens[step + 1] = the index of the largest logit (the smallest such index on ties).
__global__ void sample_greedy(const float* logits, int* tokens, int step) {
  __shared__ float best[1024];
  __shared__ int where[1024];
  const int t = threadIdx.x;
  float value = -INFINITY;
  int index = 0;
  for (int i = t; i < vocabulary; i += blockDim.x) {
    if (logits[i] > value) value = logits[i], index = i;
  }
  best[t] = value;
  where[t] = index;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (t < half) {
      const float v = best[t + half];
      const int w = where[t + half];
      if (v > best[t] || (v == best[t] && w < where[t])) best[t] = v, where[t] = w;
    }
    __syncthreads();
  }
  if (t == 0) tokens[step + 1] = where[0];
}

// ---- the model -------------------------------------------------------------------------------

// Weights made on the host (kept for the reference) and copied to the GPU.
struct Weights {
  std::vector<float> host;
  Buffer<float> device;
  Weights(Device gpu, std::size_t rows, std::size_t cols, std::uint64_t seed, float scale)
      : host(rows * cols), device(gpu, rows * cols) {
    for (std::size_t i = 0; i < host.size(); ++i) {
      host[i] = scale * (sample::unit_value(seed * 0x100000000ull + i) - 0.5f);
    }
    SAMPLE_CUDA(cudaMemcpy(device.data(), host.data(), host.size() * sizeof(float),
                           cudaMemcpyHostToDevice));
  }
};

struct Layer {
  Weights qkv, out, up, down;
  Buffer<float> keys, values;  // the KV cache: `steps` positions of `model` values each
  Layer(Device gpu, int index, int steps)
      : qkv(gpu, 3 * model, model, 10 * index + 1, std::sqrt(3.0f / model)),
        out(gpu, model, model, 10 * index + 2, std::sqrt(3.0f / model)),
        up(gpu, hidden, model, 10 * index + 3, std::sqrt(6.0f / model)),
        down(gpu, model, hidden, 10 * index + 4, std::sqrt(3.0f / hidden)),
        keys(gpu, std::size_t(steps) * model), values(gpu, std::size_t(steps) * model) {}
};

struct Model {
  Weights embedding, logits_weights;
  std::vector<Layer> layers;
  // Activations, reused by every layer (the frame orders them).
  Buffer<float> x, qkv, partial, attention, up, logits;
  Buffer<int> tokens;  // tokens[0] is the prompt's token, tokens[s + 1] the one step s decodes
  Model(Device gpu, int layer_count, int steps)
      : embedding(gpu, vocabulary, model, 1, 2.0f), logits_weights(gpu, vocabulary, model, 2,
                                                                   std::sqrt(12.0f / model)),
        x(gpu, model), qkv(gpu, 3 * model), partial(gpu, std::size_t(steps) * partial_size * heads),
        attention(gpu, model), up(gpu, hidden), logits(gpu, vocabulary), tokens(gpu, steps + 1) {
    layers.reserve(layer_count);
    for (int l = 0; l < layer_count; ++l) layers.emplace_back(gpu, l, steps);
  }
};

int chunks_for(int length) { return (length + chunk - 1) / chunk; }

// Issues one step's kernels to `sink`: sink.serial(...) runs after everything issued before,
// sink.parallel(...) after the last serial kernel only; the next serial kernel after those.
template <class Sink>
void issue_step(Model& m, int step, Sink& sink) {
  const int length = step + 1, chunks = chunks_for(length);
  sink.serial("embed", embed, dim3(model / 256), dim3(256), m.embedding.device.data(),
              m.tokens.data(), step, m.x.data());
  const float* none = nullptr;
  auto gemv_grid = [](int rows) {
    return dim3((rows + gemv_rows_per_block - 1) / gemv_rows_per_block);
  };
  const dim3 gemv_block(32 * gemv_rows_per_block);
  for (Layer& l : m.layers) {
    sink.serial("qkv", gemv, gemv_grid(3 * model), gemv_block, l.qkv.device.data(), m.x.data(),
                none, m.qkv.data(), 3 * model, model, 0);
    sink.serial("append kv", append_kv, dim3(1), dim3(model), m.qkv.data(), l.keys.data(),
                l.values.data(), step);
    for (int c = 0; c < chunks; ++c) {
      sink.parallel("attend chunk", attend_chunk, dim3(heads), dim3(chunk), m.qkv.data(),
                    l.keys.data(), l.values.data(), c * chunk, std::min(length, (c + 1) * chunk),
                    m.partial.data(), c);
    }
    sink.serial("combine", combine, dim3(heads), dim3(head_dim), m.partial.data(), chunks,
                m.attention.data());
    sink.serial("out", gemv, gemv_grid(model), gemv_block, l.out.device.data(),
                m.attention.data(), m.x.data(), m.x.data(), model, model, 0);
    sink.serial("up", gemv, gemv_grid(hidden), gemv_block, l.up.device.data(), m.x.data(), none,
                m.up.data(), hidden, model, 1);
    sink.serial("down", gemv, gemv_grid(model), gemv_block, l.down.device.data(), m.up.data(),
                m.x.data(), m.x.data(), model, hidden, 0);
  }
  sink.serial("logits", gemv, gemv_grid(vocabulary), gemv_block, m.logits_weights.device.data(),
              m.x.data(), none, m.logits.data(), vocabulary, model, 0);
  sink.serial("sample", sample_greedy, dim3(1), dim3(1024), m.logits.data(), m.tokens.data(),
              step);
}

LaunchConfig config_of(dim3 grid, dim3 block) {
  return {{grid.x, grid.y, grid.z}, {block.x, block.y, block.z}};
}

// Records a step into a command buffer: chains the serial kernels, fans the parallel ones out.
// Each is update-free: a step's new positions and lengths cost a copy, and the launch hands them
// to the device at once.
struct Recorder {
  CommandBuffer& cmd;
  Command last;
  std::vector<Command> fan;

  template <class... P, class... A>
  void serial(const char* name, void (*kernel)(P...), dim3 grid, dim3 block, A... args) {
    auto k = cmd.launch(kernel, config_of(grid, block), args...).named(name).update_free();
    if (!fan.empty()) {
      k.after_all(fan);
      fan.clear();
    } else if (last.valid()) {
      k.after(last);
    }
    last = k;
  }
  template <class... P, class... A>
  void parallel(const char* name, void (*kernel)(P...), dim3 grid, dim3 block, A... args) {
    auto k = cmd.launch(kernel, config_of(grid, block), args...).named(name).update_free();
    if (last.valid()) k.after(last);
    fan.push_back(k);
  }
};

// Launches a step's kernels on a stream, in order.
struct StreamIssuer {
  cudaStream_t stream;
  template <class... P, class... A>
  void serial(const char*, void (*kernel)(P...), dim3 grid, dim3 block, A... args) {
    kernel<<<grid, block, 0, stream>>>(args...);
  }
  template <class... P, class... A>
  void parallel(const char* name, void (*kernel)(P...), dim3 grid, dim3 block, A... args) {
    serial(name, kernel, grid, block, args...);
  }
};

void record_step(CommandBuffer& frame, Model& m, int step) {
  Recorder recorder{frame, {}, {}};
  issue_step(m, step, recorder);
}

// ---- the four ways ---------------------------------------------------------------------------

struct Run {
  std::vector<double> host_us;  // per step: the frame's host time
  // cmdgraph's way, per step: recording, finding and updating the executable, launching
  std::vector<double> record_us, acquire_us, launch_us;
  double seconds = 0;           // the whole decode, waiting for each token included
  std::vector<int> tokens;
  std::vector<float> last_logits;
  std::size_t hits = 0, misses = 0;
};

// Every way starts from the prompt's token, with the KV cache and outputs poisoned.
void reset(Model& m, int steps) {
  std::vector<int> tokens(steps + 1, -1);
  tokens[0] = start_token;
  SAMPLE_CUDA(cudaMemcpy(m.tokens.data(), tokens.data(), tokens.size() * sizeof(int),
                         cudaMemcpyHostToDevice));
  for (Layer& l : m.layers) {
    SAMPLE_CUDA(cudaMemset(l.keys.data(), 0xff, l.keys.size_bytes()));  // NaN
    SAMPLE_CUDA(cudaMemset(l.values.data(), 0xff, l.values.size_bytes()));
  }
  SAMPLE_CUDA(cudaMemset(m.logits.data(), 0xff, m.logits.size_bytes()));
  SAMPLE_CUDA(cudaDeviceSynchronize());
}

void finish(Model& m, int steps, Run& run) {
  run.tokens.resize(steps + 1);
  run.last_logits.resize(vocabulary);
  SAMPLE_CUDA(cudaMemcpy(run.tokens.data(), m.tokens.data(), run.tokens.size() * sizeof(int),
                         cudaMemcpyDeviceToHost));
  SAMPLE_CUDA(cudaMemcpy(run.last_logits.data(), m.logits.data(), vocabulary * sizeof(float),
                         cudaMemcpyDeviceToHost));
}

// Runs `steps` steps of `frame(step)` (the host's part of a step), waiting for each token with
// `wait()`, as a server streaming tokens to a user does.
template <class Frame, class Wait>
Run decode(Model& m, int steps, Frame&& frame, Wait&& wait) {
  reset(m, steps);
  Run run;
  const sample::Stopwatch whole;
  for (int step = 0; step < steps; ++step) {
    const sample::Stopwatch clock;
    frame(step, run);
    run.host_us.push_back(clock.ms() * 1000);
    wait();
  }
  run.seconds = whole.ms() / 1000;
  finish(m, steps, run);
  return run;
}

Run with_cmdgraph(Device gpu, Model& m, int steps) {
  Queue queue(gpu);
  ExecutableCache cache;
  Run run = decode(
      m, steps,
      [&](int step, Run& r) {
        const sample::Stopwatch clock;
        CommandBuffer frame("decode step");
        record_step(frame, m, step);
        const double recorded = clock.ms();
        CachedExecutable exe = cache.acquire(frame, gpu);
        const double acquired = clock.ms();
        exe->launch(queue);
        r.record_us.push_back(recorded * 1000);
        r.acquire_us.push_back((acquired - recorded) * 1000);
        r.launch_us.push_back((clock.ms() - acquired) * 1000);
      },
      [&] { queue.wait(); });
  run.hits = cache.stats().hits;
  run.misses = cache.stats().misses;
  return run;
}

Run on_a_stream(Model& m, int steps) {
  cudaStream_t stream;
  SAMPLE_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  Run run = decode(
      m, steps,
      [&](int step, Run&) {
        StreamIssuer issuer{stream};
        issue_step(m, step, issuer);
        SAMPLE_CUDA(cudaGetLastError());
      },
      [&] { SAMPLE_CUDA(cudaStreamSynchronize(stream)); });
  SAMPLE_CUDA(cudaStreamDestroy(stream));
  return run;
}

Run by_capture(Model& m, int steps) {
  cudaStream_t stream;
  SAMPLE_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaGraphExec_t exec = nullptr;
  Run run = decode(
      m, steps,
      [&](int step, Run& r) {
        cudaGraph_t graph;
        SAMPLE_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
        StreamIssuer issuer{stream};
        issue_step(m, step, issuer);
        SAMPLE_CUDA(cudaStreamEndCapture(stream, &graph));
        cudaGraphExecUpdateResultInfo info;
        if (exec && cudaGraphExecUpdate(exec, graph, &info) == cudaSuccess) {
          ++r.hits;
        } else {
          (void)cudaGetLastError();  // a refused update leaves its error behind
          if (exec) SAMPLE_CUDA(cudaGraphExecDestroy(exec));
          SAMPLE_CUDA(cudaGraphInstantiate(&exec, graph, 0));
          ++r.misses;
        }
        SAMPLE_CUDA(cudaGraphDestroy(graph));
        SAMPLE_CUDA(cudaGraphLaunch(exec, stream));
      },
      [&] { SAMPLE_CUDA(cudaStreamSynchronize(stream)); });
  SAMPLE_CUDA(cudaGraphExecDestroy(exec));
  SAMPLE_CUDA(cudaStreamDestroy(stream));
  return run;
}

Run compile_each_step(Device gpu, Model& m, int steps) {
  Queue queue(gpu);
  return decode(
      m, steps,
      [&](int step, Run& r) {
        CommandBuffer frame("decode step");
        record_step(frame, m, step);
        compile(frame, gpu).launch(queue);
        ++r.misses;
      },
      [&] { queue.wait(); });
}

// ---- the CPU reference -------------------------------------------------------------------------

// The model in double on the host, fed `tokens` (the GPU's): the logits of every step.
struct Reference {
  const Model& m;
  std::vector<std::vector<double>> keys, values;  // per layer

  std::vector<double> matvec(const std::vector<float>& w, const std::vector<double>& x,
                             std::size_t rows) const {
    std::vector<double> y(rows, 0.0);
    for (std::size_t r = 0; r < rows; ++r) {
      double sum = 0;
      for (std::size_t k = 0; k < x.size(); ++k) sum += double(w[r * x.size() + k]) * x[k];
      y[r] = sum;
    }
    return y;
  }

  std::vector<double> step(int token, int position) {
    std::vector<double> x(model);
    for (int i = 0; i < model; ++i) x[i] = m.embedding.host[std::size_t(token) * model + i];
    for (std::size_t l = 0; l < m.layers.size(); ++l) {
      const Layer& layer = m.layers[l];
      const std::vector<double> qkv = matvec(layer.qkv.host, x, 3 * model);
      keys[l].insert(keys[l].end(), qkv.begin() + model, qkv.begin() + 2 * model);
      values[l].insert(values[l].end(), qkv.begin() + 2 * model, qkv.end());
      std::vector<double> attention(model, 0.0);
      for (int h = 0; h < heads; ++h) {
        std::vector<double> scores(position + 1);
        double most = -std::numeric_limits<double>::infinity();
        for (int p = 0; p <= position; ++p) {
          double s = 0;
          for (int d = 0; d < head_dim; ++d) {
            s += qkv[h * head_dim + d] * keys[l][std::size_t(p) * model + h * head_dim + d];
          }
          scores[p] = s / std::sqrt(double(head_dim));
          most = std::max(most, scores[p]);
        }
        double sum = 0;
        for (double& s : scores) sum += (s = std::exp(s - most));
        for (int p = 0; p <= position; ++p) {
          for (int d = 0; d < head_dim; ++d) {
            attention[h * head_dim + d] +=
                scores[p] / sum * values[l][std::size_t(p) * model + h * head_dim + d];
          }
        }
      }
      const std::vector<double> out = matvec(layer.out.host, attention, model);
      for (int i = 0; i < model; ++i) x[i] += out[i];
      std::vector<double> up = matvec(layer.up.host, x, hidden);
      for (double& u : up) u = std::max(u, 0.0);
      const std::vector<double> down = matvec(layer.down.host, up, model);
      for (int i = 0; i < model; ++i) x[i] += down[i];
    }
    return matvec(m.logits_weights.host, x, vocabulary);
  }
};

// Each token the best of the reference's logits fed the same prefix (within rounding: a near
// tie may go either way in float), and the last step's logits equal to the reference's.
bool matches_reference(const Model& m, const Run& run, int steps) {
  Reference reference{m, std::vector<std::vector<double>>(m.layers.size()),
                      std::vector<std::vector<double>>(m.layers.size())};
  std::vector<double> logits;
  for (int step = 0; step < steps; ++step) {
    logits = reference.step(run.tokens[step], step);
    double best = logits[0];
    for (double v : logits) best = std::max(best, v);
    const int chosen = run.tokens[step + 1];
    if (chosen < 0 || chosen >= vocabulary ||
        logits[chosen] < best - 1e-4 * std::max(1.0, std::abs(best))) {
      std::printf("  step %d decoded token %d, whose logit is not the largest of the reference\n",
                  step, chosen);
      return false;
    }
  }
  const std::vector<float> want(logits.begin(), logits.end());
  return sample::all_close("last step's logits", run.last_logits, want, 1e-3);
}

}  // namespace

int main(int argc, char** argv) {
  sample::gpu_or_skip("decode_loop");
  const int steps = static_cast<int>(sample::flag(argc, argv, "--steps", 256));
  const int layer_count = static_cast<int>(sample::flag(argc, argv, "--layers", 8));
  const Device gpu = Device::cuda(0);
  std::printf("decode_loop: %d steps of a %d-layer model (width %d, %d heads, vocabulary %d) on "
              "%s\n", steps, layer_count, model, heads, vocabulary, gpu.name().c_str());
  Model m(gpu, layer_count, steps);

  struct Way {
    const char* name;
    Run run;
  };
  std::vector<Way> ways;
  ways.push_back({"cmdgraph: record + cache + launch", with_cmdgraph(gpu, m, steps)});
  ways.push_back({"stream: launch every kernel", on_a_stream(m, steps)});
  ways.push_back({"capture + cudaGraphExecUpdate", by_capture(m, steps)});
  ways.push_back({"cmdgraph: compile every step", compile_each_step(gpu, m, steps)});

  std::printf("  host time of a step (us): step, kernels, then each way in the order below\n");
  for (int step = 0; step < steps; ++step) {
    if (step % 16 != 0 && step % chunk != chunk - 1 && step + 1 != steps) continue;
    const int kernels = 3 + layer_count * (6 + chunks_for(step + 1));
    std::printf("  step %4d %4d kernels", step, kernels);
    for (const Way& w : ways) std::printf(" %9.1f", w.run.host_us[step]);
    std::printf("\n");
  }
  const double ours = sample::percentile(ways[0].run.host_us, 50);
  const Run& cmdgraph = ways[0].run;
  std::printf("  cmdgraph's step, medians: record %.1f us, acquire (find + update) %.1f us, "
              "launch %.1f us\n", sample::percentile(cmdgraph.record_us, 50),
              sample::percentile(cmdgraph.acquire_us, 50),
              sample::percentile(cmdgraph.launch_us, 50));
  bool ok = matches_reference(m, ways[0].run, steps);
  for (const Way& w : ways) {
    const double median = sample::percentile(w.run.host_us, 50);
    std::printf("  %-34s median host time %8.1f us a step (%5.2fx of cmdgraph's), %7.0f tokens/s,"
                " %zu hits, %zu compiles\n", w.name, median, median / ours,
                steps / w.run.seconds, w.run.hits, w.run.misses);
    if (w.run.tokens != ways[0].run.tokens) {
      std::printf("  %s decoded other tokens than %s\n", w.name, ways[0].name);
      ok = false;
    }
  }
  const std::size_t structures = static_cast<std::size_t>(chunks_for(steps));
  if (ways[0].run.misses != structures || ways[0].run.hits != steps - structures) {
    std::printf("  the cache compiled %zu times for %zu structures\n", ways[0].run.misses,
                structures);
    ok = false;
  }
  return sample::verdict("decode_loop", ok);
}
