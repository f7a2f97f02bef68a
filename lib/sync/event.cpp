// The public Event: readiness, waits and timing on either kind of device.
#include "sync/event_state.hpp"
#include "sync/thread_pool.hpp"

#include <cmdgraph/error.hpp>
#include <cmdgraph/event.hpp>

#if CMDGRAPH_HAVE_CUDA
#include "cuda/stream_ops.hpp"
#endif

namespace cmdgraph {

Event::Event(Device device, EventOptions options)
    : state_(std::make_shared<detail::EventState>(device, options.timing)) {}

Device Event::device() const noexcept { return state_ ? state_->device() : Device::host(); }
bool Event::timing() const noexcept { return state_ && state_->timing(); }
NativeEvent Event::native_handle() const noexcept { return state_ ? state_->native() : nullptr; }

namespace {
detail::EventState& checked(const std::shared_ptr<detail::EventState>& state) {
  if (!state) throw Error(errc::invalid_handle, "a moved-from event was used");
  return *state;
}
// elapsed() from a later event to an earlier one is a mistake in the caller's order.
std::chrono::duration<double, std::milli> backwards_checked(
    std::chrono::duration<double, std::milli> elapsed) {
  if (elapsed.count() < 0) {
    throw Error(errc::invalid_argument,
                "Event::elapsed(start, stop): stop was reached before start (by " +
                    std::to_string(-elapsed.count()) + " ms); swap the arguments");
  }
  return elapsed;
}

}  // namespace

bool Event::ready() const {
  detail::EventState& e = checked(state_);
  if (!e.ever_recorded()) return false;
#if CMDGRAPH_HAVE_CUDA
  if (e.device().is_cuda()) {
    const cudaError_t s = detail::cuda::query_event(e.native());
    if (s == cudaErrorNotReady) return false;
    if (s != cudaSuccess) detail::cuda::fail(s, "cudaEventQuery", detail::cuda::no_command);
    return true;
  }
#endif
  return e.finished(e.latest_begun());
}

void Event::wait() const {
  detail::EventState& e = checked(state_);
  if (!e.ever_recorded()) {
    throw Error(errc::wrong_state, "Event::wait: the event was never recorded, so nothing could "
                                   "ever make it ready");
  }
#if CMDGRAPH_HAVE_CUDA
  if (e.device().is_cuda()) {
    const detail::BlockingWait blocking;
    const cudaError_t s = detail::cuda::synchronize_event(e.native());
    if (s != cudaSuccess) detail::cuda::fail(s, "cudaEventSynchronize", detail::cuda::no_command);
    return;
  }
#endif
  e.wait_finished(e.latest_begun());
}

std::chrono::duration<double, std::milli> Event::elapsed(const Event& start, const Event& stop) {
  detail::EventState& a = checked(start.state_);
  detail::EventState& b = checked(stop.state_);
  if (!a.timing() || !b.timing()) {
    throw Error(errc::invalid_argument, std::string("Event::elapsed needs timed events; the ") +
                                            (a.timing() ? "stop" : "start") +
                                            " event was made without EventOptions{.timing = true}");
  }
  if (!(a.device() == b.device())) {
    throw Error(errc::invalid_argument, "Event::elapsed between events of " + a.device().name() +
                                            " and " + b.device().name());
  }
  if (!a.ever_recorded() || !b.ever_recorded()) {
    throw Error(errc::wrong_state, std::string("Event::elapsed: the ") +
                                       (a.ever_recorded() ? "stop" : "start") +
                                       " event was never recorded");
  }
  stop.wait();
#if CMDGRAPH_HAVE_CUDA
  if (a.device().is_cuda()) {
    const float ms = detail::cuda::elapsed_ms(a.native(), b.native(), detail::cuda::no_command);
    return backwards_checked(std::chrono::duration<double, std::milli>(ms));
  }
#endif
  start.wait();
  return backwards_checked(b.finished_at() - a.finished_at());
}

}  // namespace cmdgraph
