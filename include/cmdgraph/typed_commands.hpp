// Typed command handles: what the recording calls of kernels, parallel_for, copies, fills and
// value operations return, typed so Executable::update converts new values exactly as the
// recording did.
#pragma once

#include <cmdgraph/command.hpp>

#include <cstddef>
#include <utility>

namespace cmdgraph {

/// A kernel launch, typed by the kernel's parameters so Executable::update can convert new
/// arguments exactly as launch() did.
template <class... Params>
class KernelCommand : public BasicCommand<KernelCommand<Params...>> {
 public:
  /// An invalid handle, as BasicCommand().
  KernelCommand() = default;
  /// The handle of command `ref` (CommandBuffer::launch makes these).
  explicit KernelCommand(detail::CommandRef ref) noexcept
      : BasicCommand<KernelCommand<Params...>>(ref) {}

  /// Declares that every thread of the kernel calls cudaGridDependencySynchronize() before it
  /// touches memory its parents touch, and before it returns: every edge into it from a kernel
  /// (launch or parallel_for) then becomes programmatic (EdgeKind::programmatic), so a chain
  /// of such kernels launches each one while the one before still runs.
  /// \pre A valid handle of an open recording (else Error, as for after()).
  /// \post Returns this handle.
  KernelCommand& programmatic_safe() & {
    detail::set_programmatic_safe(this->ref());
    return *this;
  }
  /// programmatic_safe() on a temporary handle; returns it as an rvalue.
  KernelCommand&& programmatic_safe() && { return std::move(programmatic_safe()); }

  /// Makes new arguments for this kernel cost a copy of their bytes and no CUDA call: for a
  /// kernel whose arguments change every frame (a growing length, another buffer). On a CUDA
  /// graph its node is device-updatable: Executable::update(handle, args...), or an update
  /// by a re-recorded buffer that changed only values, writes the arguments where the
  /// executable keeps them, and the next launch() hands every such change to the device at
  /// once (a copy into pinned memory and one node's parameters set); a one-block kernel at
  /// the start of that launch gives the nodes their new arguments before they run. A new
  /// LaunchConfig is set from the host, as for any kernel. Elsewhere the same calls update
  /// it as any kernel, with the same results: on the streams backend (which reads every
  /// kernel's arguments as it launches anyway), in an executable that is profiled or compiled
  /// for device launch, inside an executed buffer or a conditional body.
  /// ExecutableStats::commands_update_free counts where it took effect. A graph holding such
  /// a node is rebuilt, not updated in place, by an update that changes its structure (CUDA
  /// updates no graph with device-updatable nodes as a whole), and recording it or not is a
  /// change of structure.
  /// \pre A valid handle of an open recording (else Error, as for after()).
  /// \post Returns this handle.
  KernelCommand& update_free() & {
    detail::set_update_free(this->ref());
    return *this;
  }
  /// update_free() on a temporary handle; returns it as an rvalue.
  KernelCommand&& update_free() && { return std::move(update_free()); }
};

/// A parallel_for over functor type F.
template <class F>
class ParallelForCommand : public BasicCommand<ParallelForCommand<F>> {
 public:
  /// An invalid handle, as BasicCommand().
  ParallelForCommand() = default;
  /// The handle of command `ref` (CommandBuffer::parallel_for makes these).
  explicit ParallelForCommand(detail::CommandRef ref) noexcept
      : BasicCommand<ParallelForCommand<F>>(ref) {}
};

/// A copy of elements of type T.
template <class T>
class CopyCommand : public BasicCommand<CopyCommand<T>> {
 public:
  /// An invalid handle, as BasicCommand().
  CopyCommand() = default;
  /// The handle of command `ref` (CommandBuffer::copy makes these).
  explicit CopyCommand(detail::CommandRef ref) noexcept : BasicCommand<CopyCommand<T>>(ref) {}
};

/// A memory operation of `Kind` on one value of type T (std::uint32_t or std::uint64_t), so
/// Executable::update can take a new target and value.
template <CommandKind Kind, class T>
class ValueCommand : public BasicCommand<ValueCommand<Kind, T>> {
 public:
  /// An invalid handle, as BasicCommand().
  ValueCommand() = default;
  /// The handle of command `ref` (CommandBuffer::write_value makes these).
  explicit ValueCommand(detail::CommandRef ref) noexcept
      : BasicCommand<ValueCommand<Kind, T>>(ref) {}
};

/// A fill of elements of type T (1, 2 or 4 bytes).
template <class T>
class FillCommand : public BasicCommand<FillCommand<T>> {
 public:
  /// An invalid handle, as BasicCommand().
  FillCommand() = default;
  /// The handle of command `ref` (CommandBuffer::fill makes these).
  explicit FillCommand(detail::CommandRef ref) noexcept : BasicCommand<FillCommand<T>>(ref) {}
};

}  // namespace cmdgraph
