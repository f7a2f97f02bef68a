// Executable: the public face over a backend's ExecutableImpl.
#include "backend/executable_impl.hpp"
#include "observe/nvtx.hpp"
#include "sync/event_state.hpp"
#include "sync/queue_state.hpp"
#include "sync/semaphore_state.hpp"

#include <cmdgraph/error.hpp>
#include <cmdgraph/queue.hpp>

namespace cmdgraph {

Executable::Executable() noexcept = default;
Executable::Executable(std::unique_ptr<detail::ExecutableImpl> impl) noexcept
    : impl_(std::move(impl)) {}
Executable::Executable(Executable&&) noexcept = default;
Executable& Executable::operator=(Executable&&) noexcept = default;
Executable::~Executable() = default;

detail::ExecutableImpl& Executable::impl() const {
  if (!impl_) throw Error(errc::invalid_handle, "an empty or moved-from executable was used");
  return *impl_;
}

Fence Executable::launch(Queue& queue, const SubmitInfo& info) {
  detail::ExecutableImpl& exe = impl();
  const std::shared_ptr<detail::QueueState>& q = queue.shared_state();
  if (!(q->device() == exe.device())) {
    throw Error(errc::device_mismatch, "executable '" + exe.name() + "' was compiled for " +
                                           exe.device().name() + " but the queue is on " +
                                           q->device().name());
  }
  for (const SemaphoreValue& w : info.wait) {
    if (!w.semaphore || !w.semaphore->state()) {
      throw Error(errc::invalid_handle, "launch of '" + exe.name() + "' waits on a moved-from semaphore");
    }
  }
  for (const SemaphoreValue& s : info.signal) {
    if (!s.semaphore || !s.semaphore->state()) {
      throw Error(errc::invalid_handle, "launch of '" + exe.name() + "' signals a moved-from semaphore");
    }
    s.semaphore->state()->reserve_signal(s.value);
  }
  const detail::NvtxRange range(exe.name());
  Fence fence = exe.launch(q, info);
  for (const auto& event : exe.recorded_events()) event->note_recorded();
  return fence;
}

Backend Executable::backend() const { return impl().stats().backend; }
Device Executable::device() const { return impl().device(); }
const std::string& Executable::name() const { return impl().name(); }
const ExecutableStats& Executable::stats() const { return impl().stats(); }
Executable Executable::clone() const { return Executable(impl().clone()); }


const char* to_string(Backend backend) noexcept {
  switch (backend) {
    case Backend::automatic: return "automatic";
    case Backend::cuda_graph: return "cuda_graph";
    case Backend::streams: return "streams";
    case Backend::host: return "host";
  }
  return "backend";
}

}  // namespace cmdgraph
