// Transient<T>: the handle of transient memory an executable allocates as it runs
// (CommandBuffer::alloc), usable wherever a View<T> is.
#pragma once

#include <cmdgraph/command.hpp>
#include <cmdgraph/memory.hpp>

namespace cmdgraph {

namespace detail {
/// The device_ordinal() of a transient's view: the memory of whichever device runs the
/// executable, not known while recording.
inline constexpr int transient_device = -2;
}  // namespace detail

/// Transient memory: `size()` elements of T that every launch of an executable allocates at
/// the alloc command and releases at the free command recorded for it (CommandBuffer::free),
/// or at the end of the launch when none is. Between them any command reaches it as it would
/// a Buffer: pass data(), the view, a subview() or the handle itself to launch(),
/// parallel_for functors, copies, fills, reads() and writes(). Bytes of transients whose
/// lifetimes never overlap may be shared, so the memory starts undefined at every launch.
///
/// While recording, data() is a placeholder: an address reserved for this allocation that
/// nothing may dereference. compile() rewrites every pointer-sized word of the recorded
/// arguments (kernel parameters, functors, conditions, copies, fills) that points into it,
/// one past its end included, to where the executable placed the memory; update() does the
/// same for new values. Host tasks and captures are not copied byte-wise and cannot reach
/// it. The view reports MemorySpace::device and device_ordinal() detail::transient_device.
/// A handle is a command handle (after(), named(): the name labels the memory in errors)
/// and a View<T> at once.
template <class T>
class Transient : public BasicCommand<Transient<T>>, public View<T> {
 public:
  /// An invalid handle, as BasicCommand(), with a null view.
  Transient() = default;
  /// The handle of alloc command `ref`, whose placeholder `view` is (CommandBuffer::alloc).
  Transient(detail::CommandRef ref, const View<T>& view) noexcept
      : BasicCommand<Transient<T>>(ref), View<T>(view) {}
  /// The memory as a View (the placeholder until compiled).
  const View<T>& view() const noexcept { return *this; }
};

}  // namespace cmdgraph
