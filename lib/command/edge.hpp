// Edge: "parent runs before child", by command index within one recording or plan.
#pragma once

#include <compare>
#include <cstdint>

namespace cmdgraph::detail {

struct Edge {
  std::uint32_t parent;
  std::uint32_t child;
  friend auto operator<=>(const Edge&, const Edge&) = default;  // by parent, then child
  // Written out: nvcc's front end drops the implicitly defaulted == of a .cu file that uses
  // only <=> and then warns that it is used but never defined.
  friend constexpr bool operator==(const Edge& a, const Edge& b) {
    return a.parent == b.parent && a.child == b.child;
  }
};

}  // namespace cmdgraph::detail
