// Edge: "parent runs before child", by command index within one recording or plan.
#pragma once

#include <cstdint>

namespace cmdgraph::detail {

struct Edge {
  std::uint32_t parent;
  std::uint32_t child;
  friend bool operator==(const Edge&, const Edge&) = default;
};

}  // namespace cmdgraph::detail
