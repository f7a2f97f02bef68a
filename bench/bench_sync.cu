// Handing work from one queue to another on the GPU: a timeline semaphore (stream memory
// operations, what cmdgraph uses), a CUDA event (record + stream wait), and a host round trip
// (a host callback signalling a semaphore). Latency = the waiting kernel's start minus the
// signalling kernel's end, read from the GPU's global timer.
#include "bench_support.cuh"

#include <cmdgraph/cmdgraph.hpp>

#include <cstdint>
#include <cstdio>
#include <vector>

using namespace cmdgraph;

namespace {

__device__ std::uint64_t global_time() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void stamp_end(std::uint64_t* slot) { *slot = global_time(); }
__global__ void stamp_start(std::uint64_t* slot) { *slot = global_time(); }

enum class Handoff { semaphore, event, host_callback };

const char* to_string(Handoff h) {
  switch (h) {
    case Handoff::semaphore: return "timeline semaphore (stream memory operations)";
    case Handoff::event: return "CUDA event (record + stream wait)";
    case Handoff::host_callback: return "host round trip (callback signals semaphore)";
  }
  return "?";
}

struct HostSignal {
  TimelineSemaphore* semaphore;
  std::uint64_t value;
};
void CUDART_CB signal_from_host(void* p) {
  auto* s = static_cast<HostSignal*>(p);
  s->semaphore->signal(s->value);
}

double median_latency_us(Handoff how) {
  const Device gpu = Device::cuda(0);
  constexpr int rounds = 200;
  Buffer<std::uint64_t> ends(gpu, rounds), starts(gpu, rounds);
  Queue a(gpu), b(gpu);
  TimelineSemaphore sem(0);
  Event ev(gpu);
  std::vector<HostSignal> signals(rounds);
  std::vector<CommandBuffer> first, second;
  std::vector<Executable> fe, se;
  for (int r = 0; r < rounds; ++r) {
    CommandBuffer f("end"), s("start");
    f.launch(&stamp_end, LaunchConfig{{1}, {1}}, ends.data() + r);
    s.launch(&stamp_start, LaunchConfig{{1}, {1}}, starts.data() + r);
    fe.push_back(compile(f, gpu));
    se.push_back(compile(s, gpu));
  }
  for (int r = 0; r < rounds; ++r) {
    const std::uint64_t v = r + 1;
    switch (how) {
      case Handoff::semaphore:
        b.submit(se[r], {.wait = {{sem, v}}});
        a.submit(fe[r], {.signal = {{sem, v}}});
        break;
      case Handoff::event:
        a.submit(fe[r]);
        a.record(ev);
        b.wait(ev);
        b.submit(se[r]);
        break;
      case Handoff::host_callback:
        signals[r] = {&sem, v};
        b.submit(se[r], {.wait = {{sem, v}}});
        a.submit(fe[r]);
        BENCH_CUDA(cudaLaunchHostFunc(a.native_handle(), &signal_from_host, &signals[r]));
        break;
    }
    b.wait();  // one handoff at a time: latency, not throughput
  }
  a.wait();
  std::vector<std::uint64_t> e(rounds), s(rounds);
  BENCH_CUDA(cudaMemcpy(e.data(), ends.data(), rounds * 8, cudaMemcpyDeviceToHost));
  BENCH_CUDA(cudaMemcpy(s.data(), starts.data(), rounds * 8, cudaMemcpyDeviceToHost));
  std::vector<double> us;
  for (int r = 10; r < rounds; ++r) us.push_back((double(s[r]) - double(e[r])) / 1000.0);
  return bench::median(us);
}

}  // namespace

int main() {
  if (bench::no_gpu("bench_sync")) return 0;
  std::printf("bench_sync on %s: latency from one queue's kernel end to another's kernel start\n",
              Device::cuda(0).properties().name.c_str());
  for (Handoff h : {Handoff::semaphore, Handoff::event, Handoff::host_callback}) {
    std::printf("%-52s %10.2f us (median of 190)\n", to_string(h), median_latency_us(h));
  }
  return 0;
}
