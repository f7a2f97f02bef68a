// ExecutableImpl's shared members: the refusals every backend inherits, recorded events.
#include "backend/executable_impl.hpp"

#include <cmdgraph/error.hpp>

namespace cmdgraph {
namespace detail {
Profile ExecutableImpl::last_profile() const {
  throw Error(errc::wrong_state, "executable '" + name() +
                                     "' was compiled without CompileOptions{.profile = true}");
}

void ExecutableImpl::write_cuda_dot(const std::string&) const {
  throw Error(errc::unsupported, "executable '" + name() + "' runs on the " +
                                     to_string(stats().backend) +
                                     " backend; CUDA's DOT exists for the cuda_graph backend only");
}

std::vector<std::shared_ptr<EventState>> ExecutableImpl::events_recorded_by(const Plan& plan) {
  std::vector<std::shared_ptr<EventState>> events;
  for (std::uint32_t c = 0; c < plan.size(); ++c) {
    if (plan.command(c).kind == CommandKind::event_record) {
      events.push_back(std::get<EventPayload>(plan.command(c).payload).event);
    }
    if (plan.nested[c]) {
      auto inner = events_recorded_by(*plan.nested[c]);
      events.insert(events.end(), inner.begin(), inner.end());
    }
  }
  return events;
}
}  // namespace detail

}  // namespace cmdgraph
