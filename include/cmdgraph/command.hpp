// Command handles: cheap values naming one recorded command, with fluent edges and names.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <ranges>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cmdgraph {

/// Grid or block dimensions of a kernel launch.
struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
  constexpr Dim3() = default;
  constexpr Dim3(unsigned x_, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
  friend constexpr bool operator==(const Dim3&, const Dim3&) = default;
};

/// How a kernel is launched. Every dimension must be non-zero.
struct LaunchConfig {
  Dim3 grid;
  Dim3 block;
  std::size_t shared_bytes = 0;
  friend constexpr bool operator==(const LaunchConfig&, const LaunchConfig&) = default;
};

/// What a command does.
enum class CommandKind : unsigned char {
  kernel, parallel_for, copy, fill, host, event_record, event_wait, nested, capture, barrier,
  loop, if_then,
};
const char* to_string(CommandKind kind) noexcept;

namespace detail {
/// The identity of a command: its recording (a process-unique id, never reused) and index.
struct CommandRef {
  std::uint64_t recording = 0;
  std::uint32_t index = 0;
  friend bool operator==(const CommandRef&, const CommandRef&) = default;
};
// Implemented by lib/record; each validates the handles and throws Error on misuse.
// add_edges validates every parent before adding any edge: a refused call records nothing.
void add_edges(CommandRef child, const CommandRef* parents, std::size_t count);
void set_name(CommandRef command, std::string_view name);
std::string command_name(CommandRef command);
}  // namespace detail

/// Anything that names a recorded command (Command and the typed handles).
template <class C>
concept AnyCommand = requires(const C& c) {
  { c.ref() } -> std::same_as<detail::CommandRef>;
};

/// Shared face of every handle. A handle is valid while its command buffer's recording lives;
/// using a default-constructed, moved-from or stale handle throws Error.
template <class Self>
class BasicCommand {
 public:
  BasicCommand() = default;
  BasicCommand(const BasicCommand&) = default;
  BasicCommand& operator=(const BasicCommand&) = default;
  /// A moved-from handle becomes invalid, so later use is reported rather than silently
  /// aliasing the original.
  BasicCommand(BasicCommand&& other) noexcept : ref_(std::exchange(other.ref_, {})) {}
  BasicCommand& operator=(BasicCommand&& other) noexcept {
    ref_ = std::exchange(other.ref_, {});
    return *this;
  }

  /// This command runs after every one of `parents` (edges parent -> this).
  template <AnyCommand... Parents>
  Self& after(const Parents&... parents) & {
    const detail::CommandRef refs[] = {parents.ref()..., detail::CommandRef{}};
    detail::add_edges(ref_, refs, sizeof...(Parents));
    return self();
  }
  template <AnyCommand... Parents>
  Self&& after(const Parents&... parents) && {
    return std::move(after(parents...));
  }
  /// This command runs after every command in `parents` (any range of handles). All or
  /// nothing: when one parent is refused (itself, another buffer's, stale), no edge is added.
  template <std::ranges::input_range Range>
    requires AnyCommand<std::ranges::range_value_t<Range>>
  Self& after_all(const Range& parents) & {
    std::vector<detail::CommandRef> refs;
    for (const auto& p : parents) refs.push_back(p.ref());
    detail::add_edges(ref_, refs.data(), refs.size());
    return self();
  }
  template <std::ranges::input_range Range>
    requires AnyCommand<std::ranges::range_value_t<Range>>
  Self&& after_all(const Range& parents) && {
    return std::move(after_all(parents));
  }
  /// Names the command; the name appears in every error, trace and DOT file.
  Self& named(std::string_view name) & {
    detail::set_name(ref_, name);
    return self();
  }
  Self&& named(std::string_view name) && { return std::move(named(name)); }

  std::string name() const { return detail::command_name(ref_); }
  bool valid() const noexcept { return ref_.recording != 0; }
  /// Position in recording order within its command buffer.
  std::uint32_t index() const noexcept { return ref_.index; }
  detail::CommandRef ref() const noexcept { return ref_; }

  template <class Other>
  friend bool operator==(const BasicCommand& a, const BasicCommand<Other>& b) noexcept {
    return a.ref() == b.ref();
  }

 protected:
  explicit BasicCommand(detail::CommandRef ref) noexcept : ref_(ref) {}

 private:
  Self& self() noexcept { return static_cast<Self&>(*this); }
  detail::CommandRef ref_;
};

/// A handle to any command.
class Command : public BasicCommand<Command> {
 public:
  Command() = default;
  explicit Command(detail::CommandRef ref) noexcept : BasicCommand(ref) {}
  /// Every typed handle converts to a plain Command.
  template <class Other>
    requires(!std::same_as<Other, Command>)
  Command(const BasicCommand<Other>& typed) noexcept : BasicCommand(typed.ref()) {}
};

/// A kernel launch, typed by the kernel's parameters so Executable::update can convert new
/// arguments exactly as launch() did.
template <class... Params>
class KernelCommand : public BasicCommand<KernelCommand<Params...>> {
 public:
  KernelCommand() = default;
  explicit KernelCommand(detail::CommandRef ref) noexcept
      : BasicCommand<KernelCommand<Params...>>(ref) {}
};

/// A parallel_for over functor type F.
template <class F>
class ParallelForCommand : public BasicCommand<ParallelForCommand<F>> {
 public:
  ParallelForCommand() = default;
  explicit ParallelForCommand(detail::CommandRef ref) noexcept
      : BasicCommand<ParallelForCommand<F>>(ref) {}
};

/// A copy of elements of type T.
template <class T>
class CopyCommand : public BasicCommand<CopyCommand<T>> {
 public:
  CopyCommand() = default;
  explicit CopyCommand(detail::CommandRef ref) noexcept : BasicCommand<CopyCommand<T>>(ref) {}
};

/// A fill of elements of type T (1, 2 or 4 bytes).
template <class T>
class FillCommand : public BasicCommand<FillCommand<T>> {
 public:
  FillCommand() = default;
  explicit FillCommand(detail::CommandRef ref) noexcept : BasicCommand<FillCommand<T>>(ref) {}
};

}  // namespace cmdgraph
