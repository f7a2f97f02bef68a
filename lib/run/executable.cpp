// Executable: the public face over a backend's ExecutableImpl.
#include "run/executable_impl.hpp"
#include "run/queue_state.hpp"

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

Fence Executable::launch(Queue& queue) {
  detail::ExecutableImpl& exe = impl();
  const std::shared_ptr<detail::QueueState>& q = queue.shared_state();
  if (!(q->device() == exe.device())) {
    throw Error(errc::device_mismatch, "executable '" + exe.name() + "' was compiled for " +
                                           exe.device().name() + " but the queue is on " +
                                           q->device().name());
  }
  return exe.launch(q);
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
