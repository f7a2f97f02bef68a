// Executable: a compiled command buffer, launched and re-launched on queues.
#pragma once

#include <cmdgraph/command.hpp>
#include <cmdgraph/device.hpp>
#include <cmdgraph/fence.hpp>

#include <cstddef>
#include <memory>
#include <string>

namespace cmdgraph {

class CommandBuffer;
class Queue;

/// How a plan is lowered.
enum class Backend : unsigned char {
  automatic,   ///< a CUDA graph on CUDA devices (streams when a command cannot be a graph node),
               ///< the host backend on the host device
  cuda_graph,  ///< one cudaGraphExec_t, one cudaGraphLaunch per launch
  streams,     ///< several CUDA streams ordered by events
  host,        ///< the CPU thread pool
};
const char* to_string(Backend backend) noexcept;

struct CompileOptions {
  Backend backend = Backend::automatic;
  /// Most streams the streams backend uses.
  unsigned max_streams = 4;
};

/// What compile() built and how long each stage took.
struct ExecutableStats {
  Backend backend = Backend::host;
  std::string backend_reason;      ///< why this backend was chosen
  std::size_t commands = 0;        ///< commands of the top-level plan, barriers included
  std::size_t edges_recorded = 0;  ///< distinct edges after deduplication
  std::size_t edges_reduced = 0;   ///< edges kept by the transitive reduction
  std::size_t levels = 0;          ///< length of the longest chain, in commands
  std::size_t streams = 0;         ///< CUDA streams used (streams backend)
  std::size_t events = 0;          ///< CUDA events used (streams backend)
  double plan_ms = 0, lower_ms = 0, instantiate_ms = 0;
};

namespace detail {
class ExecutableImpl;
}

/// A compiled, launchable form of a command buffer. Owns everything it needs: it may outlive
/// the command buffer, queues it ran on and the recording's handles. Launches of one
/// executable run one after another, never overlapping; clone() gives an independent
/// instance. One thread at a time may use an Executable.
class Executable {
 public:
  Executable() noexcept;
  explicit Executable(std::unique_ptr<detail::ExecutableImpl> impl) noexcept;
  Executable(Executable&&) noexcept;
  Executable& operator=(Executable&&) noexcept;
  ~Executable();

  /// Enqueues one run after everything already submitted to `queue` and after this
  /// executable's previous launch; returns at once. Throws Error(invalid_handle) on an empty
  /// (default-constructed or moved-from) executable, Error(device_mismatch) for a queue of
  /// another device.
  Fence launch(Queue& queue);

  Backend backend() const;
  Device device() const;
  const std::string& name() const;
  const ExecutableStats& stats() const;
  /// An independent instance with its own arguments, to run concurrently with this one.
  Executable clone() const;
  explicit operator bool() const noexcept { return impl_ != nullptr; }

 private:
  detail::ExecutableImpl& impl() const;
  std::unique_ptr<detail::ExecutableImpl> impl_;
};

/// Validates `commands`, builds its plan and lowers it for `device`; seals `commands`. On
/// error nothing is kept and the buffer stays open for recording.
Executable compile(CommandBuffer& commands, Device device, const CompileOptions& options = {});

}  // namespace cmdgraph
