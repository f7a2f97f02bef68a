// IndirectCalls: the recording calls of a CommandBuffer whose work the device sizes or switches
// on as it runs (launch_indirect, parallel_for_indirect, launch_if, parallel_for_if), a base of
// its own so that command_buffer.hpp stays readable.
#pragma once

#include <cmdgraph/command.hpp>
#include <cmdgraph/detail/call_site.hpp>
#include <cmdgraph/detail/parallel_for.hpp>
#include <cmdgraph/detail/specs.hpp>
#include <cmdgraph/detail/views.hpp>
#include <cmdgraph/launch_config.hpp>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <source_location>
#include <type_traits>
#include <typeinfo>
#include <utility>

namespace cmdgraph {

/// The indirect commands of a CommandBuffer (`Buffer`, which derives from this): a grid, a
/// count or a flag that commands before them in the same launch may write decides, as they
/// run, how much of their work runs.
template <class Buffer>
class IndirectCalls {
 public:
  /// Launches `kernel` on a grid read from memory as the command runs (Vulkan's
  /// vkCmdDispatchIndirect): the first element of `grid`, a DispatchSize, which commands before
  /// it in the same launch may write. It reads `grid` (hazards): order its writers before it by
  /// an edge or declared access. `config.grid` is the largest grid it runs: a dimension asked
  /// beyond it is clamped to it, and the run counted by Executable::clamped_dispatches(); a 0
  /// in any dimension runs nothing. Arguments as for launch(). On a CUDA graph the kernel is a
  /// device-updatable node whose grid a one-thread kernel before it sets on the device, so
  /// no size returns to the host (the streams backend launches the two as a graph of its own);
  /// the host backend runs no __global__ kernel (record parallel_for_indirect to run on both).
  /// A re-recorded buffer changes it; its handle updates nothing.
  /// \pre `grid` is not null or empty and is aligned to 4 bytes, `config` has no zero
  /// dimension (else Error(invalid_argument) naming the command, and nothing is recorded).
  template <class Grid, class... P, class... A>
    requires std::same_as<std::remove_const_t<detail::element_of<Grid>>, DispatchSize> &&
             (sizeof...(P) == sizeof...(A))
  Command launch_indirect(void (*kernel)(P...), const Grid& grid, const detail::LaunchAt& config,
                          A&&... args) {
    return launch_from(kernel, grid, detail::IndirectForm::grid, config,
                       std::forward<A>(args)...);
  }

  /// Calls f(i) for every i in [0, n), in parallel, where n is read from memory as the command
  /// runs: the first element of `count` (std::uint32_t or std::uint64_t), which commands
  /// before it in the same launch may write (it reads `count`, as launch_indirect reads its
  /// grid). A count above `max_count` runs `max_count` items, and the run is counted by
  /// Executable::clamped_dispatches(); a count of 0 runs nothing. The functor is as for
  /// parallel_for. On CUDA devices a dispatcher kernel sizes the parallel_for's node on the
  /// device, as for launch_indirect; on the host backend the count is read when the command
  /// runs. A re-recorded buffer changes it; its handle updates nothing.
  /// \pre `count` is not null or empty and is aligned to its element, `max_count` > 0 (else
  /// Error(invalid_argument) naming the command, and nothing is recorded).
  template <class Count, class F>
    requires std::invocable<const F&, std::size_t> &&
             detail::MemoryOpValue<std::remove_const_t<detail::element_of<Count>>>
  Command parallel_for_indirect(const Count& count, std::size_t max_count, const F& f,
                                std::source_location where = std::source_location::current()) {
    return for_from(count, detail::IndirectForm::count, max_count, f, where);
  }

  /// Launches `kernel` as launch() does when the first element of `flag` (a std::uint32_t that
  /// commands before it in the same launch may write) is not 0 as the command runs, and runs
  /// nothing when it is 0: the device enables or disables the command, with no host trip
  /// (Vulkan's conditional rendering). It reads `flag` (hazards). On a CUDA graph a one-thread
  /// kernel before the kernel's device-updatable node enables or disables it: one kernel
  /// node less than if_then's body with its conditional node (the streams backend launches
  /// the two as a graph of its own); the host backend runs no __global__ kernel (record
  /// parallel_for_if to run on both). CUDA enables only kernel nodes from the device: a copy
  /// or a fill decided on the device belongs in if_then. A re-recorded buffer changes it; its
  /// handle updates nothing.
  /// \pre `flag` is not null or empty and is aligned to 4 bytes, `config` has no zero
  /// dimension (else Error(invalid_argument) naming the command, and nothing is recorded).
  template <class Flag, class... P, class... A>
    requires std::same_as<std::remove_const_t<detail::element_of<Flag>>, std::uint32_t> &&
             (sizeof...(P) == sizeof...(A))
  Command launch_if(void (*kernel)(P...), const Flag& flag, const detail::LaunchAt& config,
                    A&&... args) {
    return launch_from(kernel, flag, detail::IndirectForm::flag_grid, config,
                       std::forward<A>(args)...);
  }

  /// Calls f(i) for every i in [0, n), in parallel, when the first element of `flag` (a
  /// std::uint32_t, as for launch_if) is not 0 as the command runs, and nothing when it is 0.
  /// The functor is as for parallel_for. On CUDA devices as launch_if; on the host backend the
  /// flag is read when the command runs.
  /// \pre `flag` is not null or empty and is aligned to 4 bytes, `n` > 0 (else
  /// Error(invalid_argument) naming the command, and nothing is recorded).
  template <class Flag, class F>
    requires std::invocable<const F&, std::size_t> &&
             std::same_as<std::remove_const_t<detail::element_of<Flag>>, std::uint32_t>
  Command parallel_for_if(const Flag& flag, std::size_t n, const F& f,
                          std::source_location where = std::source_location::current()) {
    return for_from(flag, detail::IndirectForm::flag_count, n, f, where);
  }

 private:
  Buffer& buffer() noexcept { return static_cast<Buffer&>(*this); }
  // `kernel` as launch() records it, sized or switched on by `source` as `form` says, with
  // config.grid as its largest grid.
  template <class Source, class... P, class... A>
  Command launch_from(void (*kernel)(P...), const Source& source, detail::IndirectForm form,
                      const detail::LaunchAt& config, A&&... args) {
    Buffer& b = buffer();
    return Command(b.template add_launch<P...>(
        CommandKind::indirect, config,
        [&](const detail::KernelArguments& arguments) {
          return b.add_indirect({detail::indirect_spec(source, form, config.config, 0),
                                 reinterpret_cast<const void*>(kernel), nullptr, arguments},
                                config.where);
        },
        std::forward<A>(args)...));
  }
  // A parallel_for of `f` over as many items as `source` says (`form`), at most `limit`.
  template <class Source, class F>
  Command for_from(const Source& source, detail::IndirectForm form, std::size_t limit,
                   const F& f, std::source_location where) {
    static_assert(std::is_trivially_copyable_v<F>,
                  "parallel_for functors are copied byte-wise to the device: capture pointers "
                  "and values, not containers");
    const detail::KernelParam functor = detail::kernel_param(f);
    return Command(buffer().add_indirect(
        {detail::indirect_spec(source, form, LaunchConfig{}, limit),
         detail::device_kernel_of<F>(), detail::host_invoke_of<F>(), {&functor, 1, &typeid(F)}},
        where));
  }
};

}  // namespace cmdgraph
