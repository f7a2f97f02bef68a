// The harness's reads of lib/'s internals (see internals.hpp).
#include "internals.hpp"

#include "record/recording.hpp"
#include "sync/semaphore_state.hpp"

namespace cmdgraph::fuzz {

const std::uint32_t nesting_bound = detail::max_nesting_depth;
const std::uint64_t expansion_bound = detail::max_expanded_size;

std::uint64_t expanded_size(const CommandBuffer& buffer) {
  return detail::recording_of(buffer)->expanded_size();
}

bool reached(const SemaphoreValue& wait) noexcept {
  return !wait.semaphore || wait.semaphore->value() >= wait.value;
}

void release(const SemaphoreValue& wait) {
  // As a submission's signal does (no host-signal rule applies): the harness ends waits its
  // input left deadlocked, e.g. two submissions that wait for each other's signals.
  if (!reached(wait)) wait.semaphore->advance(wait.value);
}

}  // namespace cmdgraph::fuzz
