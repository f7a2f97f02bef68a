// DispatchStates: the device memory in which a graph's dispatchers remember what they last set
// on their nodes (cuda::DispatchState), one state per dispatcher node, zeroed: nothing known.
#pragma once

#include "cuda/dispatch.hpp"
#include "cuda/runtime.hpp"

#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

namespace cmdgraph::detail {

class DispatchStates {
 public:
  /// A state of `device`'s memory that no other dispatcher has, kept as long as this is.
  cuda::DispatchState* next(int device) {
    if (used_ == per_block) {
      std::shared_ptr<void> block(
          cuda::allocate_device_zeroed(device, per_block * sizeof(cuda::DispatchState)),
          [device](void* p) { cuda::free_device(device, p); });
      blocks_.push_back(std::move(block));
      used_ = 0;
    }
    return static_cast<cuda::DispatchState*>(blocks_.back().get()) + used_++;
  }

 private:
  // States are handed out as the graph is built, which knows its dispatchers only then.
  static constexpr std::size_t per_block = 64;
  std::vector<std::shared_ptr<void>> blocks_;
  std::size_t used_ = per_block;
};

}  // namespace cmdgraph::detail
