// Fence: the completion of one launch or submission, observable from the host.
#pragma once

#include <chrono>
#include <memory>
#include <utility>

namespace cmdgraph {

namespace detail {
class FenceState;
}

/// Signalled when the work it was returned for has finished. Copies observe the same work.
/// A default-constructed Fence is already signalled. Every wait rethrows the work's error
/// (a failed host task, a CUDA fault) as cmdgraph::Error naming the command.
class Fence {
 public:
  Fence() = default;
  explicit Fence(std::shared_ptr<detail::FenceState> state) noexcept : state_(std::move(state)) {}

  /// Blocks until the work finished; rethrows its error.
  void wait() const;
  /// Waits at most `timeout`; returns true when finished (rethrowing its error), false when
  /// the time ran out.
  bool wait_for(std::chrono::nanoseconds timeout) const;
  /// True when finished, successfully or not. Never blocks, never throws.
  bool ready() const noexcept;

  const std::shared_ptr<detail::FenceState>& state() const noexcept { return state_; }

 private:
  std::shared_ptr<detail::FenceState> state_;
};

}  // namespace cmdgraph
