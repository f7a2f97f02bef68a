// ScaleJob: the work behind one connection of the fence server: one executable, re-launched
// with a new factor for every request.
#pragma once

#include <cmdgraph/cmdgraph.hpp>

#include <cstdint>
#include <memory>

/// ramp[i] = factor * i for i in [0, size) on `device`, copied to host memory and summed there.
/// Recorded once, updated and launched per request; one thread at a time.
class ScaleJob {
 public:
  ScaleJob(cmdgraph::Device device, std::size_t size);
  ScaleJob(ScaleJob&&) noexcept;
  ~ScaleJob();

  /// Launches the job with `factor` on `queue`; the fence signals when the host copy is there.
  cmdgraph::Fence launch(cmdgraph::Queue& queue, std::int64_t factor);
  /// The sum of the host copy. Precondition: the last launch's fence signalled.
  std::int64_t sum() const;
  /// What the sum must be for `factor`.
  std::int64_t expected(std::int64_t factor) const;
  const cmdgraph::Executable& executable() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};
