// ArgumentWriter: a kernel's arguments written for the launches that follow, at the cost of a
// conversion and a copy (Executable::arguments), for kernels whose arguments change every frame;
// UpdateFrame: a frame's updates made by one thread with the executable held once for all.
#pragma once

#include <cmdgraph/command.hpp>
#include <cmdgraph/detail/conversions.hpp>
#include <cmdgraph/detail/frame_slot.hpp>
#include <cmdgraph/detail/specs.hpp>

#include <memory>
#include <utility>

namespace cmdgraph {

namespace detail {
class ExecutableImpl;
/// What a writer writes to: an executable, and whether it still lives.
struct WriterTarget {
  ExecutableImpl* exe;
  std::shared_ptr<const bool> alive;  // false once the executable is destroyed
};
/// Throws Error(invalid_handle): the writer's executable was destroyed.
[[noreturn]] void reject_writer_of_destroyed();
/// Writes `arguments` as those of kernel command `command` of `exe` for the launches that
/// follow, as Executable::update(handle, args...) does; when it writes them straight into an
/// update frame's values, it teaches `slot` (whose `offsets` it fills) where they went.
void write_arguments(ExecutableImpl& exe, CommandRef command, const KernelArguments& arguments,
                     FrameSlotBase& slot, std::span<std::uint32_t> offsets);
/// Throws Error(invalid_argument) naming kernel command `command` of `exe`: `misfit` does not
/// fit its parameter.
[[noreturn]] void reject_arguments(ExecutableImpl& exe, CommandRef command,
                                   const Misfit& misfit);
/// Ends the update frame the calling thread holds open on `exe`.
void close_update_frame(ExecutableImpl& exe) noexcept;
}  // namespace detail

/// Writes the arguments of one kernel of an executable (Executable::arguments) for the launches
/// that follow, as Executable::update(handle, args...) does, at the cost of a conversion and a
/// copy of their bytes when the kernel is update-free on a CUDA graph
/// (KernelCommand::update_free, ExecutableStats::commands_update_free): no CUDA call, no
/// lookup, and launch() hands every change to the device at once. For other kernels, and
/// while any transient memory is alive in the process (the values are checked then), set()
/// takes update()'s path, with the same results. A cheap value: copy it freely.
///
/// It names its command as a handle does: once the executable takes a re-recorded buffer
/// (update(CommandBuffer&)), set() throws Error(foreign_handle) as update() with the old
/// handle would; ask the executable again with the new buffer's handle. Once the executable
/// is destroyed, set() throws Error(invalid_handle). Used as the executable is: by one thread
/// at a time, not while another launches it.
template <class... P>
class ArgumentWriter {
 public:
  /// New arguments for the launches that follow, converted and checked as launch() converted
  /// and checked them (a value its parameter cannot hold throws Error(invalid_argument) and
  /// changes nothing).
  template <class... A>
    requires(sizeof...(P) == sizeof...(A) && (detail::converts_to<A, P> && ...))
  void set(A&&... args) const {
    if (!*target_.alive) detail::reject_writer_of_destroyed();
    if (auto misfit = detail::first_misfit<P...>(args...)) {
      detail::reject_arguments(*target_.exe, command_, *misfit);
    }
    if (slot_.open()) {  // where the library wrote last in this thread's frame: no call
      slot_.write(std::forward<A>(args)...);
      return;
    }
    const detail::ConvertedArguments<P...> converted(std::forward<A>(args)...);
    detail::write_arguments(*target_.exe, command_, converted.arguments(), slot_,
                            slot_.offsets());
  }

 private:
  friend class Executable;
  ArgumentWriter(detail::WriterTarget target, detail::CommandRef command) noexcept
      : target_(std::move(target)), command_(command) {}
  detail::WriterTarget target_;
  detail::CommandRef command_;
  mutable detail::FrameSlot<P...> slot_;
};

/// A frame of updates (Executable::update_frame): while it lives, the thread that opened it
/// holds the executable for its updates, by handle, through ArgumentWriters and by re-recorded
/// buffers alike, and each of them skips making sure that no other thread launches or updates
/// the executable at the same time (an atomic exchange and a store); a set() of an update-free
/// kernel then writes straight into the values the next launch hands to the device, and after
/// a writer's first write, in this frame and later ones, with no call into the library, until
/// an update by a re-recorded buffer or a clone() (a quarter of a set()'s host time outside a
/// frame, as tools/probes/writer_cost.cu measures it). Until it is destroyed, launch() and
/// clone() throw Error(concurrent_use), as do other threads' updates. It outlives its
/// executable harmlessly.
/// Moved, it still holds the executable for the thread that opened it.
class UpdateFrame {
 public:
  /// Takes `other`'s hold; `other` then closes nothing.
  UpdateFrame(UpdateFrame&& other) noexcept
      : target_{std::exchange(other.target_.exe, nullptr), std::move(other.target_.alive)} {}
  /// Closes this frame, then takes `other`'s hold.
  UpdateFrame& operator=(UpdateFrame&& other) noexcept {
    if (this != &other) {
      close();
      target_ = {std::exchange(other.target_.exe, nullptr), std::move(other.target_.alive)};
    }
    return *this;
  }
  /// Closes the frame: the executable launches again.
  ~UpdateFrame() { close(); }
  /// Closes the frame now (as destroying it does); later calls do nothing.
  void close() noexcept {
    if (target_.exe && *target_.alive) detail::close_update_frame(*target_.exe);
    target_.exe = nullptr;
  }

 private:
  friend class Executable;
  explicit UpdateFrame(detail::WriterTarget target) noexcept : target_(std::move(target)) {}
  detail::WriterTarget target_;
};

}  // namespace cmdgraph
