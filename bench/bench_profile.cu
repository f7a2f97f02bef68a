// What profiling costs on the GPU: a graph replayed unprofiled, in event mode, in CUPTI mode
// (every launch, and one launch in 100), against a raw CUDA graph of the same shape and a
// CUPTI probe written by hand (concurrent-kernel activity on a replayed raw graph, records read
// through buffer callbacks), in the same process. Shapes: a chain of 1,000 kernels and 8
// independent chains of 125, empty or spinning ~10 us. Trials alternate; medians; ratios; and
// the host's time per launch call of the traced modes.
//
// cmdgraph's phase runs first, then the probe's: CUPTI has one set of buffer callbacks per
// process, and the probe registering its own takes them from cmdgraph's session for good.
//
// Bounded: each phase prints its figures (line-buffered) as it ends, with the seconds spent so
// far, and shapes left when CMDGRAPH_BENCH_SECONDS (default 150) has passed are skipped, so a
// run cut short by a time limit still shows what it measured (run 47 printed nothing in 80 s).
#include "bench_cupti.cuh"
#include "bench_support.cuh"

#include <cmdgraph/cmdgraph.hpp>

#include <cupti.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

using namespace cmdgraph;

namespace {

constexpr long long cycles_per_us = 1'980;  // H200 at its top clock

__global__ void spin(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

struct Shape {
  std::string name;
  int chains;
  int length;
  long long cycles;  // 0: empty kernels
  int launches;      // per trial and mode
  int kernels() const { return chains * length; }
};

const Shape shapes[] = {
    {"chain of 1,000 empty", 1, 1000, 0, 30},
    {"8 x 125 empty", 8, 125, 0, 30},
    {"chain of 1,000 x 10 us", 1, 1000, 10 * cycles_per_us, 5},
    {"8 x 125 x 10 us", 8, 125, 10 * cycles_per_us, 10},
};
constexpr int trials = 7;
constexpr unsigned every = 100;

const auto bench_start = std::chrono::steady_clock::now();

double seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - bench_start).count();
}

double budget() {
  const char* s = std::getenv("CMDGRAPH_BENCH_SECONDS");
  return s ? std::atof(s) : 150.0;
}

cudaGraph_t raw_graph(const Shape& s) {
  static long long cycles = 0;
  cycles = s.cycles;
  cudaGraph_t g;
  BENCH_CUDA(cudaGraphCreate(&g, 0));
  void* args[] = {&cycles};
  const cudaKernelNodeParams p = bench::one_thread_node(&spin, args);
  for (int c = 0; c < s.chains; ++c) {
    cudaGraphNode_t prev = nullptr;
    for (int i = 0; i < s.length; ++i) {
      cudaGraphNode_t n;
      BENCH_CUDA(cudaGraphAddKernelNode(&n, g, prev ? &prev : nullptr, prev ? 1 : 0, &p));
      prev = n;
    }
  }
  return g;
}

cudaGraphExec_t instantiate(cudaGraph_t g) {
  cudaGraphExec_t exec;
  BENCH_CUDA(cudaGraphInstantiate(&exec, g, 0));
  return exec;
}

CommandBuffer recorded(const Shape& s) {
  CommandBuffer cmd(s.name);
  for (int c = 0; c < s.chains; ++c) {
    Command prev;
    for (int i = 0; i < s.length; ++i) {
      auto k = cmd.launch(&spin, LaunchConfig{{1}, {1}}, s.cycles);
      if (i) k.after(prev);
      prev = k;
    }
  }
  return cmd;
}

void launch_raw(cudaGraphExec_t exec, cudaStream_t stream) {
  BENCH_CUDA(cudaGraphLaunch(exec, stream));
}

// Medians of each mode's device time per launch, in microseconds.
using Medians = std::map<std::string, double>;
std::map<std::string, Medians> results;  // per shape

// Device time per launch; `host_us`, when given, gets the host's time per launch call (the
// launches are enqueued back to back: when the host takes longer than the GPU, the GPU waits).
double per_launch(cudaStream_t stream, int launches, const std::function<void()>& one,
                  double* host_us = nullptr) {
  return bench::device_us(stream, [&] {
           const auto start = std::chrono::steady_clock::now();
           for (int i = 0; i < launches; ++i) one();
           if (host_us) {
             *host_us = std::chrono::duration<double, std::micro>(
                            std::chrono::steady_clock::now() - start).count() / launches;
           }
         }) / launches;
}

std::map<std::string, std::map<std::string, std::vector<double>>> host_times;  // shape, mode

// What both phases measure on: a queue, its stream, and the raw graph of a shape.
struct Stage {
  explicit Stage(const Shape& s) : q(gpu), stream(q.native_handle()), g(raw_graph(s)),
                                   raw(instantiate(g)) {}
  ~Stage() {
    BENCH_CUDA(cudaGraphExecDestroy(raw));
    BENCH_CUDA(cudaGraphDestroy(g));
  }
  Device gpu = Device::cuda(0);
  Queue q;
  cudaStream_t stream;
  cudaGraph_t g;
  cudaGraphExec_t raw;
};

// cmdgraph's phase: raw graph, unprofiled, events, CUPTI every launch, CUPTI one in 100.
void ours(const Shape& s) {
  Stage stage(s);
  const Device gpu = stage.gpu;
  Queue& q = stage.q;
  cudaStream_t stream = stage.stream;
  cudaGraphExec_t raw = stage.raw;
  CommandBuffer cmd = recorded(s);
  Executable plain = compile(cmd, gpu, {.backend = Backend::cuda_graph});
  Executable events = compile(cmd, gpu, {.backend = Backend::cuda_graph,
                                         .profile = ProfileMode::events});
  Executable sampled = compile(cmd, gpu, {.backend = Backend::cuda_graph,
                                          .profile = ProfileMode::cupti, .profile_every = every});
  std::map<std::string, std::vector<double>> t;
  for (int trial = 0; trial <= trials; ++trial) {  // trial 0 warms up
    std::map<std::string, double> one;
    one["raw graph"] = per_launch(stream, s.launches, [&] { launch_raw(raw, stream); });
    one["unprofiled"] = per_launch(stream, s.launches, [&] { plain.launch(q); });
    one["events"] = per_launch(stream, s.launches, [&] { events.launch(q); });
    {
      // Made and dropped within the trial, as run 47 did when an executable profiling every
      // launch kept CUPTI collecting for its whole life (it collects per launch now).
      Executable traced = compile(cmd, gpu, {.backend = Backend::cuda_graph,
                                             .profile = ProfileMode::cupti});
      std::printf("  %s, trial %d: CUPTI executable compiled at %.1f s\n", s.name.c_str(),
                  trial, seconds());
      traced.launch(q).wait();  // its upload
      double host = 0;
      one["cupti"] = per_launch(stream, s.launches, [&] { traced.launch(q); }, &host);
      if (trial) host_times[s.name]["CUPTI mode"].push_back(host);
      q.wait();
      std::printf("  %s, trial %d: %d CUPTI launches done at %.1f s\n", s.name.c_str(), trial,
                  s.launches, seconds());
      if (trial == trials) {
        const Profile p = traced.last_profile();
        std::printf("  %s: CUPTI profile of launch %llu: %zu commands, %zu without a record, "
                    "launch %.1f us, launch() %.1f us\n", s.name.c_str(),
                    static_cast<unsigned long long>(p.launch), p.commands.size(), p.unmeasured,
                    p.launch_ms * 1000, p.enqueue_end_ms * 1000);
      }
    }
    one["cupti, 1 in 100"] = per_launch(stream, every, [&] { sampled.launch(q); });
    q.wait();
    // A line per trial, so that a run cut short still shows what each mode cost.
    std::printf("  %s, trial %d at %.1f s: raw %.1f, unprofiled %.1f, events %.1f, CUPTI %.1f, "
                "CUPTI 1 in %u %.1f us per launch\n", s.name.c_str(), trial, seconds(),
                one["raw graph"], one["unprofiled"], one["events"], one["cupti"], every,
                one["cupti, 1 in 100"]);
    if (trial == 0) continue;
    for (const auto& [mode, us] : one) t[mode].push_back(us);
  }
  const Profile p = sampled.last_profile();
  std::printf("  %s: sampled profile is launch %llu (%zu without a record)\n", s.name.c_str(),
              static_cast<unsigned long long>(p.launch), p.unmeasured);
  for (auto& [mode, v] : t) results[s.name][mode] = bench::median(v);
  const Medians& m = results[s.name];
  std::printf("  %s (%.1f s): per launch raw %.1f, unprofiled %.1f, events %.1f, CUPTI %.1f, "
              "CUPTI 1 in %u %.1f us\n", s.name.c_str(), seconds(), m.at("raw graph"),
              m.at("unprofiled"), m.at("events"), m.at("cupti"), every,
              m.at("cupti, 1 in 100"));
}

// ---- The probe: CUPTI by hand ----

std::atomic<std::uint64_t> probe_records{0}, probe_with_node{0};

void CUPTIAPI probe_requested(std::uint8_t** buffer, std::size_t* size, std::size_t* most) {
  *size = 8u << 20;
  *buffer = static_cast<std::uint8_t*>(std::aligned_alloc(8, *size));
  *most = 0;
}

void CUPTIAPI probe_completed(CUcontext, std::uint32_t, std::uint8_t* buffer, std::size_t,
                              std::size_t valid) {
  CUpti_Activity* record = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) continue;
    ++probe_records;
    probe_with_node += reinterpret_cast<const CUpti_ActivityKernel10*>(record)->graphNodeId != 0;
  }
  std::free(buffer);
}

// The probe's variants, to tell what CUPTI itself costs from what cmdgraph adds: the kinds it
// collects (kernels only, or also cmdgraph's copies and fills) and whether collection stays on
// for a trial's launches or is switched on and off around each, as cmdgraph does.
// And whether the graph was instantiated while the four kinds were collected, as cmdgraph did
// before it collected only what a graph runs.
const std::vector<CUpti_ActivityKind> kernel_kind = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL};
const std::vector<CUpti_ActivityKind> four_kinds = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
    CUPTI_ACTIVITY_KIND_MEMCPY2, CUPTI_ACTIVITY_KIND_MEMSET};

struct ProbeVariant {
  const char* name;
  const std::vector<CUpti_ActivityKind>& kinds;
  bool switched_per_launch;
  bool instantiated_under_four = false;
};

const ProbeVariant probe_variants[] = {
    {"raw CUPTI probe", kernel_kind, false},
    {"probe, cmdgraph's 4 kinds", four_kinds, false},
    {"probe, switched per launch", kernel_kind, true},
    {"probe, 4 kinds switched per launch", four_kinds, true},
    {"probe, made under 4 kinds", kernel_kind, false, true},
    {"probe, made under 4 kinds, switched", kernel_kind, true, true},
};

void collect(const std::vector<CUpti_ActivityKind>& kinds, bool on) {
  for (CUpti_ActivityKind k : kinds) {
    BENCH_CUPTI(on ? cuptiActivityEnable(k) : cuptiActivityDisable(k));
  }
}

void probe(const Shape& s) {
  Stage stage(s);
  cudaStream_t stream = stage.stream;
  cudaGraphExec_t raw = stage.raw;
  collect(kernel_kind, true);
  cudaGraphExec_t traced = instantiate(stage.g);  // instantiated while CUPTI collects
  collect(kernel_kind, false);
  collect(four_kinds, true);
  cudaGraphExec_t traced_four = instantiate(stage.g);
  collect(four_kinds, false);
  probe_records = probe_with_node = 0;
  std::vector<double> r;
  std::map<std::string, std::vector<double>> p;
  for (int trial = 0; trial <= trials; ++trial) {
    const double ru = per_launch(stream, s.launches, [&] { launch_raw(raw, stream); });
    if (trial) r.push_back(ru);
    for (const ProbeVariant& v : probe_variants) {
      if (!v.switched_per_launch) collect(v.kinds, true);
      const cudaGraphExec_t exec = v.instantiated_under_four ? traced_four : traced;
      double host = 0;
      const double pu = per_launch(stream, s.launches, [&] {
        if (v.switched_per_launch) collect(v.kinds, true);
        launch_raw(exec, stream);
        if (v.switched_per_launch) collect(v.kinds, false);
      }, &host);
      if (trial) host_times[s.name][v.name].push_back(host);
      if (!v.switched_per_launch) collect(v.kinds, false);
      if (trial) p[v.name].push_back(pu);
    }
  }
  BENCH_CUPTI(cuptiActivityFlushAll(0));
  std::printf("  %s: probe read %llu kernel records (%llu with a graph node id)\n",
              s.name.c_str(), static_cast<unsigned long long>(probe_records.load()),
              static_cast<unsigned long long>(probe_with_node.load()));
  results[s.name]["raw graph (probe phase)"] = bench::median(r);
  std::printf("  %s (%.1f s): per launch raw %.1f us", s.name.c_str(), seconds(),
              bench::median(r));
  for (const ProbeVariant& v : probe_variants) {
    results[s.name][v.name] = bench::median(p[v.name]);
    std::printf(", %s %.1f us", v.name, results[s.name][v.name]);
  }
  std::printf("\n");
  BENCH_CUDA(cudaGraphExecDestroy(traced));
  BENCH_CUDA(cudaGraphExecDestroy(traced_four));
}

void report(const Shape& s) {
  Medians& m = results[s.name];
  if (!m.count("raw CUPTI probe")) m["raw CUPTI probe"] = m["raw graph (probe phase)"] = NAN;
  const double base = m["unprofiled"];
  const double probe_ratio = m["raw CUPTI probe"] / m["raw graph (probe phase)"];
  const bool empty = s.cycles == 0;
  bench::header(s.name.c_str());
  bench::row("unprofiled, time per launch", m["raw graph"], base, "us", "<= 1.02x");
  bench::row("event mode against unprofiled", base, m["events"], "us", "(today's cost)");
  bench::row("CUPTI mode against unprofiled", base, m["cupti"], "us",
             empty ? "" : "<= 1.10x");
  bench::row("raw CUPTI probe against raw graph", m["raw graph (probe phase)"],
             m["raw CUPTI probe"], "us", "(CUPTI's own cost)");
  std::printf("%-52s %12.3fx %12.3fx %-5s %7.3fx  %s\n",
              "CUPTI mode's overhead against the probe's",
              probe_ratio, m["cupti"] / base, "", (m["cupti"] / base) / probe_ratio,
              empty ? "<= 1.05x" : "");
  bench::row("CUPTI mode, 1 launch in 100, against unprofiled", base, m["cupti, 1 in 100"], "us",
             "<= 1.02x");
  for (const ProbeVariant& v : probe_variants) {
    if (m.count(v.name)) {
      bench::row(std::string("  ") + v.name + " against raw",
                 m["raw graph (probe phase)"], m[v.name], "us", "(CUPTI's own cost)");
    }
  }
  for (auto& [mode, v] : host_times[s.name]) {
    std::printf("  host time per launch call, %-36s %9.1f us\n", mode.c_str(), bench::median(v));
  }
  std::printf("%-52s %+12.3f us (events %+.3f us, probe %+.3f us)\n",
              "  overhead per command, CUPTI mode", (m["cupti"] - base) / s.kernels(),
              (m["events"] - base) / s.kernels(),
              (m["raw CUPTI probe"] - m["raw graph (probe phase)"]) / s.kernels());
}

}  // namespace

int main() {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // figures show even if a time limit kills it
  if (bench::no_gpu("bench_profile")) return 0;
  std::printf("cmdgraph's phase (raw graph, unprofiled, events, CUPTI, CUPTI 1 in %u)\n", every);
  const double half = budget() / 2;
  for (const Shape& s : shapes) {
    if (seconds() > half) {
      std::printf("  %s: skipped, %.0f s spent (CMDGRAPH_BENCH_SECONDS)\n", s.name.c_str(),
                  seconds());
      continue;
    }
    ours(s);
  }
  std::printf("probe phase (raw graph, raw graph traced by CUPTI concurrent-kernel activity)\n");
  const CUptiResult registered =
      cuptiActivityRegisterCallbacks(&probe_requested, &probe_completed);
  if (registered == CUPTI_SUCCESS) {
    for (const Shape& s : shapes) {
      if (!results.count(s.name) || seconds() > budget()) continue;
      probe(s);
    }
  } else {
    const char* what = nullptr;
    cuptiGetResultString(registered, &what);
    std::printf("  the probe could not register its buffer callbacks (%s): no probe figures\n",
                what ? what : "?");
  }
  for (const Shape& s : shapes) {
    if (results.count(s.name)) report(s);
  }
  std::printf("\nbench_profile: %.1f s\n", seconds());
  return 0;
}
