// Edge: "parent runs before child", by command index within one recording or plan.
#pragma once

#include <compare>
#include <cstdint>

namespace cmdgraph::detail {

struct Edge {
  std::uint32_t parent;
  std::uint32_t child;
  friend auto operator<=>(const Edge&, const Edge&) = default;  // by parent, then child
};

}  // namespace cmdgraph::detail
