// The harness's reads of lib/'s internals (see internals.hpp).
#include "internals.hpp"

#include "record/recording.hpp"
#include "sync/semaphore_state.hpp"

#include <cmdgraph/error.hpp>

#include <limits>

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
  if (reached(wait)) return;
  try {
    wait.semaphore->signal(wait.value);
  } catch (const Error&) {  // a pending submission claimed a higher value: go past every claim
    wait.semaphore->signal(std::numeric_limits<std::uint64_t>::max());
  }
}

}  // namespace cmdgraph::fuzz
