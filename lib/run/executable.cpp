// Executable: the public face over a backend's ExecutableImpl.
#include "backend/executable_impl.hpp"
#include "observe/nvtx.hpp"
#include "sync/access.hpp"
#include "sync/event_state.hpp"
#include "sync/queue_state.hpp"
#include "sync/semaphore_state.hpp"

#include <cmdgraph/error.hpp>
#include <cmdgraph/queue.hpp>

#include <utility>
#include <vector>

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

namespace {

// The signal values a submission claims, withdrawn again unless it is enqueued: a failed
// submit changes nothing.
class SignalClaims {
 public:
  SignalClaims(const detail::ExecutableImpl& exe, const SubmitInfo& info) {
    claims_.reserve(info.signal.size());
    try {
      for (const SemaphoreValue& s : info.signal) {
        if (!s.semaphore) {
          throw Error(errc::invalid_handle,
                      "launch of '" + exe.name() + "' signals a moved-from semaphore");
        }
        refuse_signal_at_or_below_own_wait(exe, info, s);
        claims_.push_back({s.semaphore.get(), s.value, s.semaphore->reserve_signal(s.value)});
      }
    } catch (...) {
      cancel();  // no destructor runs for a constructor that throws
      throw;
    }
  }
  SignalClaims(const SignalClaims&) = delete;
  SignalClaims& operator=(const SignalClaims&) = delete;
  ~SignalClaims() {
    if (!kept_) cancel();
  }
  void keep() noexcept { kept_ = true; }

 private:
  // It would run only once the value reached its wait, then signal no higher: a value must
  // grow with each signal (Vulkan's rule), and nothing but this submission would signal it.
  static void refuse_signal_at_or_below_own_wait(const detail::ExecutableImpl& exe,
                                                 const SubmitInfo& info,
                                                 const SemaphoreValue& signal) {
    for (const SemaphoreValue& wait : info.wait) {
      if (wait.semaphore == signal.semaphore && signal.value <= wait.value) {
        throw Error(errc::invalid_argument,
                    "launch of '" + exe.name() + "' waits for a semaphore to reach " +
                        std::to_string(wait.value) + " and signals it " +
                        std::to_string(signal.value) +
                        ": a signal must be above the value the submission waits for");
      }
    }
  }

  void cancel() noexcept {
    for (auto it = claims_.rbegin(); it != claims_.rend(); ++it) {
      it->semaphore->cancel_signal(it->value, it->previous);
    }
  }

  struct Claim {
    detail::SemaphoreState* semaphore;
    std::uint64_t value, previous;
  };
  std::vector<Claim> claims_;
  bool kept_ = false;
};

// `queue`'s state, which must be of `exe`'s device.
const std::shared_ptr<detail::QueueState>& state_for(const detail::ExecutableImpl& exe,
                                                      Queue& queue) {
  const std::shared_ptr<detail::QueueState>& q = detail::Access::state(queue);
  if (!q) throw Error(errc::invalid_handle, "a moved-from queue was used");
  if (!(q->device() == exe.device())) {
    throw Error(errc::device_mismatch, "executable '" + exe.name() + "' was compiled for " +
                                           exe.device().name() + " but the queue is on " +
                                           q->device().name());
  }
  return q;
}

}  // namespace

Fence Executable::launch(Queue& queue, const SubmitInfo& info) {
  detail::ExecutableImpl& exe = impl();
  const detail::ExecutableImpl::Sharing sharing(exe);
  const std::shared_ptr<detail::QueueState>& q = state_for(exe, queue);
  for (const SemaphoreValue& w : info.wait) {
    if (!w.semaphore) {
      throw Error(errc::invalid_handle, "launch of '" + exe.name() + "' waits on a moved-from semaphore");
    }
  }
  SignalClaims claims(exe, info);
  const detail::NvtxRange range(exe.name());
  Fence fence = exe.launch(q, info);
  claims.keep();
  for (const auto& event : exe.recorded_events()) event->note_recorded();
  return fence;
}

DeviceExecutable Executable::device_executable(Queue& queue) {
  detail::ExecutableImpl& exe = impl();
  const detail::ExecutableImpl::Sharing sharing(exe);
  return DeviceExecutable{exe.device_graph(state_for(exe, queue))};
}

Backend Executable::backend() const { return impl().stats().backend; }
Device Executable::device() const { return impl().device(); }
const std::string& Executable::name() const { return impl().name(); }
const ExecutableStats& Executable::stats() const { return impl().stats_with_lint(); }
Executable Executable::clone() const {
  const detail::ExecutableImpl::Sharing sharing(impl());
  return Executable(impl().clone());
}

const char* to_string(Backend backend) noexcept {
  switch (backend) {
    case Backend::automatic: return "automatic";
    case Backend::cuda_graph: return "cuda_graph";
    case Backend::streams: return "streams";
    case Backend::host: return "host";
  }
  return "backend";
}

const char* to_string(ProfileMode mode) noexcept {
  switch (mode) {
    case ProfileMode::off: return "off";
    case ProfileMode::automatic: return "automatic";
    case ProfileMode::events: return "events";
    case ProfileMode::cupti: return "cupti";
    case ProfileMode::host_clock: return "host_clock";
  }
  return "profile mode";
}

}  // namespace cmdgraph
