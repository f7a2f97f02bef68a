// Move-only owners of CUDA objects, each counted while alive so tests can prove that every
// error path destroyed what it created. Deleters never throw and never report.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string_view>

#include "cuda/check.hpp"

namespace cmdgraph::detail::cuda {

/// Objects created through this layer and not yet destroyed.
struct LiveCounts {
  std::int64_t streams = 0, events = 0, graphs = 0, execs = 0, device_allocations = 0,
               pinned_allocations = 0;
  friend bool operator==(const LiveCounts&, const LiveCounts&) = default;
};
LiveCounts live_counts() noexcept;

struct StreamDeleter {
  void operator()(cudaStream_t s) const noexcept;
};
struct EventDeleter {
  void operator()(cudaEvent_t e) const noexcept;
};
struct GraphDeleter {
  void operator()(cudaGraph_t g) const noexcept;
};
struct GraphExecDeleter {
  void operator()(cudaGraphExec_t g) const noexcept;
};

using Stream = std::unique_ptr<CUstream_st, StreamDeleter>;
using Event = std::unique_ptr<CUevent_st, EventDeleter>;
using Graph = std::unique_ptr<CUgraph_st, GraphDeleter>;
using GraphExec = std::unique_ptr<CUgraphExec_st, GraphExecDeleter>;

/// A non-blocking stream on `device` with `priority` (clamped by CUDA to its range).
Stream create_stream(int device, int priority, Served served = no_command);
/// An event on `device`; timing off unless asked (cheaper to record and wait on).
Event create_event(int device, bool timing, Served served = no_command);
Graph create_graph(Served served = no_command);
/// Takes ownership of a graph CUDA created (e.g. by ending a capture).
Graph adopt(cudaGraph_t graph) noexcept;
GraphExec adopt(cudaGraphExec_t exec) noexcept;

/// Makes `device` current for the scope, restoring the previous one after.
class ScopedDevice {
 public:
  explicit ScopedDevice(int device);
  ~ScopedDevice();
  ScopedDevice(const ScopedDevice&) = delete;
  ScopedDevice& operator=(const ScopedDevice&) = delete;

 private:
  int previous_ = -1;
  int device_ = -1;
};

namespace counters {
void allocation_made(bool pinned) noexcept;
void allocation_freed(bool pinned) noexcept;
}  // namespace counters

}  // namespace cmdgraph::detail::cuda
