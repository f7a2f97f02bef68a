// The fence of one CUDA launch: an event recorded after the launch's work, borrowed from a
// pool, plus what turns its end into an error: a device fault (naming the commands that run
// device code) or a host task's exception.
#pragma once

#include "backend/cuda_common/host_callbacks.hpp"
#include "cuda/handles.hpp"
#include "run/fence_state.hpp"

#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace cmdgraph::detail {

/// Completion events of one executable, reused across launches.
class EventPool {
 public:
  explicit EventPool(int device) : device_(device) {}
  cuda::Event take();
  void give(cuda::Event event) noexcept;

 private:
  int device_;
  std::mutex mutex_;
  std::vector<cuda::Event> free_;
};

/// What a launch's fence reports errors with; shared by all launches of one executable.
struct LaunchContext {
  std::string executable;
  int device = 0;
  std::vector<std::string> suspects;  // commands running device code
  std::shared_ptr<HostErrors> host_errors;
  std::shared_ptr<EventPool> events;
};

/// Records a completion event on `stream` (after the launch's work) and returns its fence.
std::shared_ptr<FenceState> fence_after_launch(cudaStream_t stream,
                                               std::shared_ptr<const LaunchContext> context,
                                               std::uint64_t launch);

}  // namespace cmdgraph::detail
