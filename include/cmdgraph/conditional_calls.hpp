// ConditionalCalls: the conditional recording calls of a CommandBuffer (loop_while, if_then,
// if_else, switch_on), a base of its own so that command_buffer.hpp stays readable.
#pragma once

#include <cmdgraph/command.hpp>
#include <cmdgraph/detail/parallel_for.hpp>

#include <concepts>
#include <functional>
#include <initializer_list>
#include <ranges>
#include <source_location>
#include <type_traits>
#include <vector>

namespace cmdgraph {

namespace detail {
/// What switch_on takes as a selector: a functor returning an integer other than bool.
template <class S>
concept Selector = std::invocable<const S&> && std::integral<std::invoke_result_t<const S&>> &&
                   !std::same_as<std::invoke_result_t<const S&>, bool>;
}  // namespace detail

/// The conditional commands of a CommandBuffer (`Buffer`, which derives from this): other
/// buffers run as bodies, as a condition evaluated when the command runs decides.
template <class Buffer>
class ConditionalCalls {
 public:
  /// Runs `body` as one command again and again while `condition()` is true, checked before
  /// every pass (so possibly never). `condition` is a trivially copyable functor returning
  /// bool, __host__ __device__ under nvcc like a parallel_for functor; it reads what the body
  /// wrote. On a CUDA device the loop is a conditional WHILE node: a one-thread kernel
  /// evaluates the condition after each pass and the passes never return to the host. The CUDA
  /// graph backend makes it a node of the executable's graph; the streams backend launches it
  /// as a small graph of its own on the command's stream, in order with the rest. Either way
  /// the body holds only what CUDA allows in a conditional body (kernels, parallel_for, copies
  /// between device or pinned memory, fills, executed buffers, conditional commands), and a
  /// conditional command cannot sit inside an executed buffer there. The host backend
  /// evaluates the condition on the host. Seals `body`. A condition that never turns false
  /// runs forever: bound it (a pass counter in the condition) or wait with a timeout.
  template <class C>
    requires std::predicate<const C&>
  Command loop_while(Buffer& body, const C& condition,
                     std::source_location where = std::source_location::current()) {
    return Command(buffer().add_loop(body, detail::condition_spec(condition), where));
  }

  /// Runs `body` as one command, once if `condition()` is true when the command runs (after its
  /// parents), not at all otherwise. `condition` is a condition as for loop_while: trivially
  /// copyable, returning bool, __host__ __device__ under nvcc. On a CUDA device it is a
  /// conditional IF node whose handle a one-thread kernel sets on the device, so the decision
  /// never returns to the host; the body then holds what a loop body may hold (see
  /// loop_while, which also says how each backend runs it). Seals `body`.
  template <class C>
    requires std::predicate<const C&>
  Command if_then(const C& condition, Buffer& body,
                  std::source_location where = std::source_location::current()) {
    return Command(buffer().add_if(body, detail::condition_spec(condition), where));
  }

  /// Runs `then_body` once if `condition()` is true when the command runs, else `else_body`
  /// once: exactly one of them runs. `condition` is as for if_then. On a CUDA device it is a
  /// conditional IF node with two bodies (CUDA's IF/ELSE), decided on the device; the bodies
  /// hold what a loop body may hold (see loop_while). Seals both bodies; they may be one
  /// buffer.
  template <class C>
    requires std::predicate<const C&>
  Command if_else(const C& condition, Buffer& then_body, Buffer& else_body,
                  std::source_location where = std::source_location::current()) {
    Buffer* const bodies[] = {&then_body, &else_body};
    return Command(buffer().add_if_else(bodies, detail::condition_spec(condition), where));
  }

  /// Runs `bodies[k]` once, where k is what `selector()` returns when the command runs; a value
  /// outside [0, bodies.size()) (negative, or too large) runs no body, as CUDA's SWITCH node
  /// does. `selector` is a trivially copyable functor returning an integer (not bool),
  /// __host__ __device__ under nvcc like a condition. On a CUDA device it is a conditional
  /// SWITCH node with one body per case, decided on the device by a one-thread kernel; the
  /// bodies hold what a loop body may hold (see loop_while). `bodies` must not be empty (else
  /// Error(invalid_argument)); one buffer may serve as several cases. Seals every body.
  template <class S>
    requires detail::Selector<S>
  Command switch_on(const S& selector, std::initializer_list<std::reference_wrapper<Buffer>> bodies,
                    std::source_location where = std::source_location::current()) {
    std::vector<Buffer*> cases;
    for (Buffer& body : bodies) cases.push_back(&body);
    return Command(buffer().add_switch(cases, detail::selector_spec(selector), where));
  }
  /// switch_on() over a range of buffers, or of std::reference_wrapper<CommandBuffer> (case k
  /// is the range's k-th), for cases known at run time.
  template <class S, std::ranges::input_range Range>
    requires detail::Selector<S> &&
             std::convertible_to<std::ranges::range_reference_t<Range>, Buffer&>
  Command switch_on(const S& selector, Range&& bodies,
                    std::source_location where = std::source_location::current()) {
    std::vector<Buffer*> cases;
    for (Buffer& body : bodies) cases.push_back(&body);
    return Command(buffer().add_switch(cases, detail::selector_spec(selector), where));
  }

 private:
  Buffer& buffer() noexcept { return static_cast<Buffer&>(*this); }
};

}  // namespace cmdgraph
