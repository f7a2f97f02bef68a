// The two facts the harness needs beyond the public API, read from lib/'s internals
// (internals.cpp): how big a recording is once expanded, and whether a submitted semaphore
// wait has been reached, so the harness can end the waits its input left without a signaller.
#pragma once

#include <cmdgraph/command_buffer.hpp>
#include <cmdgraph/semaphore.hpp>

#include <cstdint>

namespace cmdgraph::fuzz {

/// The library's bounds on nesting: levels of executed buffers and bodies, and commands once
/// executed buffers are expanded.
extern const std::uint32_t nesting_bound;
extern const std::uint64_t expansion_bound;

/// Commands of `buffer` once executed buffers are expanded (Error for a moved-from buffer).
std::uint64_t expanded_size(const CommandBuffer& buffer);
/// True once the semaphore of `wait` has reached its value.
bool reached(const SemaphoreValue& wait) noexcept;
/// Raises the semaphore of `wait` to its value as a submission's signal would, so the wait
/// ends even where the host may not signal (a submission has a lower signal pending).
void release(const SemaphoreValue& wait);

}  // namespace cmdgraph::fuzz
