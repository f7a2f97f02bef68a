// make_queue: the kind of queue each device has.
#include "sync/queue_state.hpp"

#include "sync/host_queue.hpp"
#if CMDGRAPH_HAVE_CUDA
#include "sync/cuda_queue.hpp"
#endif

#include <cmdgraph/error.hpp>

namespace cmdgraph::detail {

void QueueState::mark(FenceState&) {}

std::shared_ptr<QueueState> make_queue(Device device, Priority priority) {
#if CMDGRAPH_HAVE_CUDA
  if (device.is_cuda()) {
    return std::make_shared<CudaQueue>(device, CudaQueue::native_priority_of(device, priority));
  }
#endif
  (void)priority;  // the host runs its queues' work in submission order, without priorities
  return make_queue(device, 0);
}

std::shared_ptr<QueueState> make_queue(Device device, int native_priority) {
  if (device.is_host()) return std::make_shared<HostQueue>();
#if CMDGRAPH_HAVE_CUDA
  return std::make_shared<CudaQueue>(device, native_priority);
#else
  (void)native_priority;
  throw Error(errc::no_device, "this build of cmdgraph has no CUDA support");
#endif
}

}  // namespace cmdgraph::detail
