// How a kernel is launched: its grid, block and dynamic shared memory.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cmdgraph {

/// Grid or block dimensions of a kernel launch.
struct Dim3 {
  /// Extents in x, y and z.
  ///@{
  unsigned x = 1, y = 1, z = 1;
  ///@}
  /// 1 x 1 x 1.
  constexpr Dim3() = default;
  /// `x_` x `y_` x `z_`; converts from one number, so `{blocks}` is a 1-D grid.
  constexpr Dim3(unsigned x_, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
  /// Equal when all three extents are.
  friend constexpr bool operator==(const Dim3&, const Dim3&) = default;
};

/// How a kernel is launched. Every dimension must be non-zero.
struct LaunchConfig {
  /// Blocks in the grid.
  Dim3 grid;
  /// Threads per block.
  Dim3 block;
  /// Dynamic shared memory per block, in bytes.
  std::size_t shared_bytes = 0;
  /// Equal when grid, block and shared memory are.
  friend constexpr bool operator==(const LaunchConfig&, const LaunchConfig&) = default;
};

/// A grid as memory holds it for CommandBuffer::launch_indirect (Vulkan's
/// VkDispatchIndirectCommand): blocks in x, y and z, written by the commands before the launch.
struct DispatchSize {
  /// Blocks in x, y and z; a 0 in any of them runs nothing.
  ///@{
  std::uint32_t x = 1, y = 1, z = 1;
  ///@}
};

}  // namespace cmdgraph
