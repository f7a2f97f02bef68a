// The conditional commands' payloads (loop_while, if_then, if_else, switch_on): their bodies,
// the condition or selector that picks among them, and how each kind branches on its value.
#pragma once

#include "command/argument_store.hpp"
#include "command/kind_traits.hpp"

#include <cmdgraph/detail/specs.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace cmdgraph::detail {

class Recording;  // record/: a conditional body; backends reach its plan through
                  // Plan::bodies_of(c), never the recording itself

/// A host+device functor that decides which body of a conditional command runs, stored like a
/// kernel parameter: on CUDA devices a one-thread kernel evaluates it and sets a conditional
/// handle to the value `host` returns on the host (1 or 0 for a condition, the selected body
/// for a selector).
struct Condition {
  ArgumentStore::Slot functor;
  HostCondition host;         // null when the functor has no host version
  const void* device_kernel;  // null when not recorded in a CUDA translation unit
  bool operator==(const Condition&) const = default;
};

/// How a conditional command runs its bodies for its condition's value (CUDA's WHILE, IF and
/// SWITCH nodes).
enum class Branching : unsigned char {
  repeat,  ///< body 0 again and again while the value is non-zero, checked before every pass
  once,    ///< body 0 once when the value is non-zero, else body 1 when there is one
  select,  ///< body `value` once; none when the value names no body
};

/// The body a condition's `value` runs, or nullopt for none.
constexpr std::optional<std::uint32_t> chosen_body(Branching branching, std::uint32_t value,
                                                   std::size_t bodies) noexcept {
  if (branching == Branching::select) {
    return value < bodies ? std::optional<std::uint32_t>(value) : std::nullopt;
  }
  if (value != 0) return 0u;
  return branching == Branching::once && bodies > 1 ? std::optional<std::uint32_t>(1u)
                                                    : std::nullopt;
}

/// What every conditional command stores: its bodies, in the order its kind gives them
/// meaning (Branching), and the condition or selector that picks among them.
struct ConditionalBodies {
  std::vector<std::shared_ptr<const Recording>> bodies;
  Condition condition;
  const void* code() const noexcept { return condition.device_kernel; }
  bool operator==(const ConditionalBodies&) const = default;
  bool equal_but_bodies(const ConditionalBodies& other) const noexcept {
    return condition == other.condition && bodies.size() == other.bodies.size();
  }
};

struct LoopPayload : ConditionalBodies {
  static constexpr KindTraits traits{.kind = CommandKind::loop, .name = "loop_while",
                                     .dot_shape = "doubleoctagon", .runs_device_code = true,
                                     .in_device_graph = false, .declares_access = true,
                                     .conditional = true};
  static constexpr Branching branching = Branching::repeat;
  bool operator==(const LoopPayload&) const = default;
};

struct IfPayload : ConditionalBodies {
  static constexpr KindTraits traits{.kind = CommandKind::if_then, .name = "if_then",
                                     .dot_shape = "Mdiamond", .runs_device_code = true,
                                     .in_device_graph = false, .declares_access = true,
                                     .conditional = true};
  static constexpr Branching branching = Branching::once;  // one body
  bool operator==(const IfPayload&) const = default;
};

struct IfElsePayload : ConditionalBodies {
  static constexpr KindTraits traits{.kind = CommandKind::if_else, .name = "if_else",
                                     .dot_shape = "hexagon", .runs_device_code = true,
                                     .in_device_graph = false, .declares_access = true,
                                     .conditional = true};
  static constexpr Branching branching = Branching::once;  // then, else
  bool operator==(const IfElsePayload&) const = default;
};

struct SwitchPayload : ConditionalBodies {
  static constexpr KindTraits traits{.kind = CommandKind::switch_on, .name = "switch_on",
                                     .dot_shape = "invtrapezium", .runs_device_code = true,
                                     .in_device_graph = false, .declares_access = true,
                                     .conditional = true};
  static constexpr Branching branching = Branching::select;  // one body per case
  bool operator==(const SwitchPayload&) const = default;
};

}  // namespace cmdgraph::detail
