// cmdgraph's CUDA graph backend against a hand-built raw CUDA graph of the same shape, in the
// same process: replay time, launch() host cost, compile time, and in-place updates.
#include "bench_support.cuh"

#include <cmdgraph/cmdgraph.hpp>

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

using namespace cmdgraph;

namespace {

struct Shape {
  const char* name;
  int chains;
  int length;
};

// A raw graph of `chains` independent chains of `length` empty kernels.
cudaGraph_t raw_graph(const Shape& s, std::vector<cudaGraphNode_t>* nodes = nullptr) {
  static int arg = 0;
  cudaGraph_t g;
  BENCH_CUDA(cudaGraphCreate(&g, 0));
  void* args[] = {&arg};
  const cudaKernelNodeParams p = bench::one_thread_node(&bench::empty_kernel, args);
  for (int c = 0; c < s.chains; ++c) {
    cudaGraphNode_t prev = nullptr;
    for (int i = 0; i < s.length; ++i) {
      cudaGraphNode_t n;
      BENCH_CUDA(cudaGraphAddKernelNode(&n, g, prev ? &prev : nullptr, prev ? 1 : 0, &p));
      if (nodes) nodes->push_back(n);
      prev = n;
    }
  }
  return g;
}

CommandBuffer recorded(const Shape& s) {
  CommandBuffer cmd(s.name);
  for (int c = 0; c < s.chains; ++c) {
    Command prev;
    for (int i = 0; i < s.length; ++i) {
      auto k = cmd.launch(&bench::empty_kernel, LaunchConfig{{1}, {1}}, 0);
      if (i) k.after(prev);
      prev = k;
    }
  }
  return cmd;
}

void replay(const Shape& s) {
  const Device gpu = Device::cuda(0);
  Queue q(gpu);
  cudaStream_t stream = q.native_handle();
  cudaGraph_t g = raw_graph(s);
  cudaGraphExec_t exec;
  BENCH_CUDA(cudaGraphInstantiate(&exec, g, 0));
  CommandBuffer cmd = recorded(s);
  Executable exe = compile(cmd, gpu, {.backend = Backend::cuda_graph});
  Executable profiled = compile(cmd, gpu, {.backend = Backend::cuda_graph, .profile = true});
  constexpr int launches = 50, host_launches = 20, trials = 25;
  std::vector<double> raw_dev, our_dev, raw_host, our_host, profiled_dev;
  std::vector<double> paired;  // each launch() less the cudaGraphLaunch just before it
  for (int t = 0; t < trials + 1; ++t) {  // the first trial warms up
    const double rd = bench::device_us(stream, [&] {
      for (int i = 0; i < launches; ++i) BENCH_CUDA(cudaGraphLaunch(exec, stream));
    }) / launches;
    const double od = bench::device_us(stream, [&] {
      for (int i = 0; i < launches; ++i) exe.launch(q);
    }) / launches;
    const double pd = bench::device_us(stream, [&] {
      for (int i = 0; i < launches; ++i) profiled.launch(q);
    }) / launches;
    q.wait();
    // Each launch alone on an idle stream: back to back, CUDA's queue of pending work fills
    // within tens of launches of 1,000 kernels and a launch then waits for the device (run 66:
    // 367 us per call).
    std::vector<double> raw_calls, our_calls;
    auto raw_call = [&] {
      raw_calls.push_back(bench::host_us([&] { BENCH_CUDA(cudaGraphLaunch(exec, stream)); }));
      BENCH_CUDA(cudaStreamSynchronize(stream));
    };
    auto our_call = [&] {
      our_calls.push_back(bench::host_us([&] { exe.launch(q); }));
      q.wait();
    };
    for (int i = 0; i < host_launches; ++i) {
      // Whichever comes second in a pair may find the host warmer: take turns.
      if ((t + i) % 2) {
        our_call();
        raw_call();
      } else {
        raw_call();
        our_call();
      }
    }
    const double rh = bench::median(raw_calls), oh = bench::median(our_calls);
    if (t == 0) continue;
    for (int i = 0; i < host_launches; ++i) paired.push_back(our_calls[i] - raw_calls[i]);
    raw_dev.push_back(rd);
    our_dev.push_back(od);
    profiled_dev.push_back(pd);
    raw_host.push_back(rh);
    our_host.push_back(oh);
  }
  bench::row(std::string(s.name) + ": profile mode, time per launch", bench::median(raw_dev),
             bench::median(profiled_dev), "us", "(cost of profiling)");
  const int kernels = s.chains * s.length;
  bench::row(std::string(s.name) + ": time per launch", bench::median(raw_dev),
             bench::median(our_dev), "us", "<= 1.02x");
  bench::row(std::string(s.name) + ": per kernel", bench::median(raw_dev) / kernels,
             bench::median(our_dev) / kernels, "us", "");
  // Host time on a shared machine only ever gains noise: the best trial is the cost itself.
  const double rh = *std::min_element(raw_host.begin(), raw_host.end());
  const double oh = *std::min_element(our_host.begin(), our_host.end());
  bench::row(std::string(s.name) + ": host cost of one launch() (best)", rh, oh, "us",
             "<= raw + 0.3 us");
  // The host drifts over a run by more than the overhead: a difference within each pair of
  // calls made a few microseconds apart cancels the drift.
  std::printf("%-52s %+12.2f us (medians: %+.2f us; median of %zu pairs: %+.2f us)\n",
              "  launch() overhead over cudaGraphLaunch", oh - rh,
              bench::median(our_host) - bench::median(raw_host), paired.size(),
              bench::median(paired));
  // Control: the same graph instantiated as cmdgraph instantiates it (uploaded at once), launched
  // raw, against the plain instantiation: what of the pair difference is CUDA's exec alone.
  cudaGraphInstantiateParams params{};
  params.flags = cudaGraphInstantiateFlagUpload;
  params.uploadStream = stream;
  cudaGraphExec_t uploaded;
  BENCH_CUDA(cudaGraphInstantiateWithParams(&uploaded, g, &params));
  BENCH_CUDA(cudaStreamSynchronize(stream));
  std::vector<double> control;
  for (int i = 0; i < trials * host_launches; ++i) {
    double times[2];
    for (int k = 0; k < 2; ++k) {
      const bool upload_first = i % 2;
      cudaGraphExec_t e = (k == 0) == upload_first ? uploaded : exec;
      times[e == uploaded] = bench::host_us([&] { BENCH_CUDA(cudaGraphLaunch(e, stream)); });
      BENCH_CUDA(cudaStreamSynchronize(stream));
    }
    control.push_back(times[1] - times[0]);
  }
  std::printf("%-52s %+12.2f us (median of %zu pairs)\n",
              "  control: raw launch of an uploaded instantiation", bench::median(control),
              control.size());
  BENCH_CUDA(cudaGraphExecDestroy(uploaded));
  BENCH_CUDA(cudaGraphExecDestroy(exec));
  BENCH_CUDA(cudaGraphDestroy(g));
}

// Where the host time of one launch goes: each CUDA call a launch could make, alone.
void launch_anatomy() {
  const Device gpu = Device::cuda(0);
  Queue q(gpu);
  cudaStream_t stream = q.native_handle();
  const Shape one{"one kernel", 1, 1};
  cudaGraph_t g = raw_graph(one);
  cudaGraphExec_t exec;
  BENCH_CUDA(cudaGraphInstantiate(&exec, g, 0));
  cudaEvent_t e;
  BENCH_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  CommandBuffer cmd = recorded(one);
  Executable exe = compile(cmd, gpu, {.backend = Backend::cuda_graph});
  constexpr int calls = 200;
  std::vector<double> launch, record, get_device, ours;
  for (int t = 0; t < 10; ++t) {
    launch.push_back(bench::host_us([&] {
      for (int i = 0; i < calls; ++i) BENCH_CUDA(cudaGraphLaunch(exec, stream));
    }) / calls);
    BENCH_CUDA(cudaStreamSynchronize(stream));
    record.push_back(bench::host_us([&] {
      for (int i = 0; i < calls; ++i) BENCH_CUDA(cudaEventRecord(e, stream));
    }) / calls);
    int d = 0;
    get_device.push_back(bench::host_us([&] {
      for (int i = 0; i < calls; ++i) BENCH_CUDA(cudaGetDevice(&d));
    }) / calls);
    ours.push_back(bench::host_us([&] {
      for (int i = 0; i < calls; ++i) exe.launch(q);
    }) / calls);
    q.wait();
  }
  auto best = [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); };
  std::printf("%-52s %12.3f us (best of 10)\n", "cudaGraphLaunch (one kernel)", best(launch));
  std::printf("%-52s %12.3f us\n", "cudaEventRecord", best(record));
  std::printf("%-52s %12.3f us\n", "cudaGetDevice", best(get_device));
  std::printf("%-52s %12.3f us\n", "cmdgraph launch() (one kernel)", best(ours));
  BENCH_CUDA(cudaEventDestroy(e));
  BENCH_CUDA(cudaGraphExecDestroy(exec));
  BENCH_CUDA(cudaGraphDestroy(g));
}

// Build cost: recording and compile() (upload started, as compile() leaves it) against
// adding the nodes by hand, instantiating and uploading.
void compile_time(const Shape& s, int trials) {
  const Device gpu = Device::cuda(0);
  const double kernels = static_cast<double>(s.chains) * s.length;
  cudaStream_t stream;
  BENCH_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::vector<double> raw, raw_upload, raw_add, ours, built, rec, plan, lower, inst;
  for (int t = 0; t < trials + 1; ++t) {  // the first trial warms up
    const double add = bench::host_us([&] { BENCH_CUDA(cudaGraphDestroy(raw_graph(s))); });
    const double r = bench::host_us([&] {
      cudaGraph_t g = raw_graph(s);
      cudaGraphExec_t exec;
      BENCH_CUDA(cudaGraphInstantiate(&exec, g, 0));
      BENCH_CUDA(cudaGraphExecDestroy(exec));
      BENCH_CUDA(cudaGraphDestroy(g));
    });
    const double ru = bench::host_us([&] {
      cudaGraph_t g = raw_graph(s);
      cudaGraphExec_t exec;
      cudaGraphInstantiateParams p{};
      p.flags = cudaGraphInstantiateFlagUpload;
      p.uploadStream = stream;
      BENCH_CUDA(cudaGraphInstantiateWithParams(&exec, g, &p));
      BENCH_CUDA(cudaStreamSynchronize(stream));
      BENCH_CUDA(cudaGraphExecDestroy(exec));
      BENCH_CUDA(cudaGraphDestroy(g));
    });
    std::optional<CommandBuffer> cmd;
    const double rc = bench::host_us([&] { cmd.emplace(recorded(s)); });
    Executable exe;
    const double o = bench::host_us([&] { exe = compile(*cmd, gpu, {.backend = Backend::cuda_graph}); });
    if (t == 0) continue;
    raw.push_back(r);
    raw_add.push_back(add);
    raw_upload.push_back(ru);
    ours.push_back(o);
    built.push_back(rc + o);
    rec.push_back(rc);
    plan.push_back(exe.stats().plan_ms * 1000);
    lower.push_back(exe.stats().lower_ms * 1000);
    inst.push_back(exe.stats().instantiate_ms * 1000);
  }
  const std::string name = s.name;
  bench::row("compile " + name + " vs AddKernelNode + Instantiate", bench::median(raw),
             bench::median(ours), "us", "");
  bench::row("record + compile " + name + " vs the same with upload", bench::median(raw_upload),
             bench::median(built), "us", "<= 1.0x");
  std::printf("%-52s %.3f / %.3f us per kernel (raw with upload / ours)\n", "  per kernel",
              bench::median(raw_upload) / kernels, bench::median(built) / kernels);
  std::printf("%-52s add nodes %.0f us, instantiate %.0f us\n", "  raw stages",
              bench::median(raw_add), bench::median(raw) - bench::median(raw_add));
  std::printf("%-52s record %.0f us, plan %.0f us, lower %.0f us, instantiate (upload started) "
              "%.0f us\n",
              "  cmdgraph stages", bench::median(rec), bench::median(plan), bench::median(lower),
              bench::median(inst));
  BENCH_CUDA(cudaStreamDestroy(stream));
}

__global__ void store_kernel(int n, int value, int* out) {
  if (threadIdx.x < n) out[threadIdx.x] = value;
}

void update_time() {
  const Device gpu = Device::cuda(0);
  constexpr int n = 1000;
  Buffer<int> out(gpu, n);
  // Raw: a chain of 1000 store kernels, updated node by node.
  cudaGraph_t g;
  BENCH_CUDA(cudaGraphCreate(&g, 0));
  int one = 1;
  int* ptr = out.data();
  const std::vector<cudaGraphNode_t> nodes =
      bench::kernel_chain(g, &store_kernel, n, [&](int) { return std::tuple{1, 0, ptr}; });
  cudaGraphExec_t exec;
  BENCH_CUDA(cudaGraphInstantiate(&exec, g, 0));
  CommandBuffer cmd("updates");
  std::vector<KernelCommand<int, int, int*>> ks;
  for (int i = 0; i < n; ++i) {
    auto k = cmd.launch(&store_kernel, LaunchConfig{{1}, {1}}, 1, 0, ptr);
    if (i) k.after(ks.back());
    ks.push_back(k);
  }
  Executable exe = compile(cmd, gpu, {.backend = Backend::cuda_graph});
  auto record = [&](int value) {
    CommandBuffer again("updates");
    Command prev;
    for (int i = 0; i < n; ++i) {
      auto k = again.launch(&store_kernel, LaunchConfig{{1}, {1}}, 1, value, ptr);
      if (i) k.after(prev);
      prev = k;
    }
    return again;
  };
  CommandBuffer whole_cmd = record(0);
  Executable whole = compile(whole_cmd, gpu, {.backend = Backend::cuda_graph});
  std::vector<double> raw, ours, rebuild, recompile, rerecorded;
  for (int t = 0; t < 6; ++t) {
    int value = t + 1;
    raw.push_back(bench::host_us([&] {
      for (int i = 0; i < n; ++i) {
        void* args[] = {&one, &value, &ptr};
        const cudaKernelNodeParams p = bench::one_thread_node(&store_kernel, args);
        BENCH_CUDA(cudaGraphExecKernelNodeSetParams(exec, nodes[i], &p));
      }
    }));
    ours.push_back(bench::host_us([&] {
      for (int i = 0; i < n; ++i) exe.update(ks[i], 1, value, ptr);
    }));
    rebuild.push_back(bench::host_us([&] {
      cudaGraphExec_t again;
      BENCH_CUDA(cudaGraphInstantiate(&again, g, 0));
      BENCH_CUDA(cudaGraphExecDestroy(again));
    }));
    // What a cmdgraph user would otherwise do: record and compile anew.
    recompile.push_back(bench::host_us([&] {
      CommandBuffer again = record(value);
      Executable fresh = compile(again, gpu, {.backend = Backend::cuda_graph});
    }));
    // Or re-record and update the whole executable (cudaGraphExecUpdate).
    CommandBuffer again = record(value);
    rerecorded.push_back(bench::host_us([&] { whole.update(again); }));
  }
  // The updates took effect: one more launch stores the last value everywhere.
  Queue q(gpu);
  exe.launch(q).wait();
  int check = 0;
  BENCH_CUDA(cudaMemcpy(&check, ptr, sizeof(int), cudaMemcpyDeviceToHost));
  bench::row("update all args of 1,000 nodes vs per-node SetParams", bench::median(raw),
             bench::median(ours), "us", "<= 1.2x");
  bench::row("  the same vs cudaGraphInstantiate alone", bench::median(rebuild), bench::median(ours),
             "us", "<= 0.2x");
  bench::row("  the same vs record + compile() anew", bench::median(recompile), bench::median(ours),
             "us", "");
  bench::row("  update(re-recorded buffer) vs per-node SetParams", bench::median(raw),
             bench::median(rerecorded), "us", "");
  std::printf("%-52s %s\n", "  stored value after the updates", check == 6 ? "correct" : "WRONG");
  BENCH_CUDA(cudaGraphExecDestroy(exec));
  BENCH_CUDA(cudaGraphDestroy(g));
}

}  // namespace

// `bench_cuda_graph launch`: the replay and launch sections only.
int main(int argc, char** argv) {
  if (bench::no_gpu("bench_cuda_graph")) return 0;
  const DeviceProperties p = Device::cuda(0).properties();
  std::printf("bench_cuda_graph on %s; medians of repeated trials\n", p.name.c_str());
  bench::header("graph replay");
  replay({"chain of 1,000", 1, 1000});
  replay({"8 x 125 independent chains", 8, 125});
  bench::header("launch() anatomy: host time per call");
  launch_anatomy();
  if (argc > 1 && std::string(argv[1]) == "launch") return 0;
  bench::header("compile");
  compile_time({"10,000 kernels (8 chains)", 8, 1250}, 5);
  compile_time({"100,000 kernels (8 chains)", 8, 12500}, 3);
  bench::header("update in place");
  update_time();
  return 0;
}
