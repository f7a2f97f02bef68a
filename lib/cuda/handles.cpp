// CUDA object owners and their live counts.
#include "cuda/handles.hpp"

#include "cuda/check.hpp"
#include "cuda/runtime.hpp"

#include <atomic>
#include <utility>

namespace cmdgraph::detail::cuda {
namespace {

struct Counters {
  std::atomic<std::int64_t> streams{0}, events{0}, graphs{0}, execs{0}, device_allocations{0},
      pinned_allocations{0};
};
Counters& counts() {
  static Counters c;
  return c;
}

}  // namespace

LiveCounts live_counts() noexcept {
  const Counters& c = counts();
  return {c.streams.load(), c.events.load(), c.graphs.load(),
          c.execs.load(),   c.device_allocations.load(), c.pinned_allocations.load()};
}

namespace {
// Destruction never reports; a failure must not leave CUDA's sticky last error behind for an
// unrelated call to trip over. Not counted by fault injection, which would skip the call: a
// graph never destroyed keeps what it holds (a communicator NCCL captured) alive for ever.
template <class F>
void destroy(F&& f) noexcept {
  if (f() != cudaSuccess) clear_error();
}
}  // namespace

void StreamDeleter::operator()(cudaStream_t s) const noexcept {
  destroy([&] { return cudaStreamDestroy(s); });
  --counts().streams;
}
void EventDeleter::operator()(cudaEvent_t e) const noexcept {
  destroy([&] { return cudaEventDestroy(e); });
  --counts().events;
}
void GraphDeleter::operator()(cudaGraph_t g) const noexcept {
  destroy([&] { return cudaGraphDestroy(g); });
  --counts().graphs;
}
void GraphExecDeleter::operator()(cudaGraphExec_t g) const noexcept {
  destroy([&] { return cudaGraphExecDestroy(g); });
  --counts().execs;
}

Stream create_stream(int device, int priority, Served served) {
  const ScopedDevice on(device);
  cudaStream_t s = nullptr;
  CMDGRAPH_CUDA(served, cudaStreamCreateWithPriority, &s, cudaStreamNonBlocking, priority);
  ++counts().streams;
  return Stream(s);
}

Event create_event(int device, bool timing, Served served) {
  const ScopedDevice on(device);
  cudaEvent_t e = nullptr;
  CMDGRAPH_CUDA(served, cudaEventCreateWithFlags, &e,
                timing ? cudaEventDefault : cudaEventDisableTiming);
  ++counts().events;
  return Event(e);
}

Graph create_graph(Served served) {
  cudaGraph_t g = nullptr;
  CMDGRAPH_CUDA(served, cudaGraphCreate, &g, 0u);
  ++counts().graphs;
  return Graph(g);
}

Graph adopt(cudaGraph_t graph) noexcept {
  ++counts().graphs;
  return Graph(graph);
}

GraphExec adopt(cudaGraphExec_t exec) noexcept {
  ++counts().execs;
  return GraphExec(exec);
}

ScopedDevice::ScopedDevice(int device) : device_(device) {
  // With one device visible it is the current one: spare each launch cudaGetDevice (0.05 us
  // warm, ~0.1 us inside a launch on the H200 machine).
  if (device == 0 && device_count() == 1) {
    previous_ = device;
    return;
  }
  CMDGRAPH_CUDA(no_command, cudaGetDevice, &previous_);
  if (previous_ != device_) CMDGRAPH_CUDA(no_command, cudaSetDevice, device_);
}

ScopedDevice::~ScopedDevice() {
  if (previous_ != device_) (void)try_call([&] { return cudaSetDevice(previous_); });
}

namespace counters {
void allocation_made(bool pinned) noexcept {
  ++(pinned ? counts().pinned_allocations : counts().device_allocations);
}
void allocation_freed(bool pinned) noexcept {
  --(pinned ? counts().pinned_allocations : counts().device_allocations);
}
}  // namespace counters

}  // namespace cmdgraph::detail::cuda
