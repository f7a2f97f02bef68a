// DeviceArguments: the update-free kernels of a graph executable (KernelCommand::update_free).
// An update writes their arguments into the executable's values and stages them; the next
// launch copies what changed into a block of pinned memory, and the applier kernel at the start
// of that launch sets each changed parameter on its device-updatable node (cuda/dispatch.hpp).
#pragma once

#include "backend/executable_impl.hpp"
#include "command/argument_store.hpp"
#include "cuda/dispatch.hpp"
#include "cuda/graph_ops.hpp"
#include "plan/plan.hpp"

#include <cmdgraph/launch_config.hpp>

#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

namespace cmdgraph::detail {

class DeviceArguments {
 public:
  static constexpr std::uint32_t none = ~std::uint32_t{0};

  /// The update-free kernels among the root commands of `plan`, whose values are `values`;
  /// empty() when it has none.
  DeviceArguments(const Plan& plan, const ArgumentStore& values);
  DeviceArguments(const DeviceArguments&) = delete;
  DeviceArguments& operator=(const DeviceArguments&) = delete;

  bool empty() const noexcept { return commands_.empty(); }
  /// How many kernels take their arguments on the device.
  std::size_t size() const noexcept { return commands_.size(); }
  /// Whether root command `c` is one of them.
  bool holds(std::uint32_t c) const noexcept { return place_[c] != none; }
  /// The root command at each place of an applier's node table.
  const std::vector<std::uint32_t>& commands() const noexcept { return commands_; }

  /// After an update wrote root command `c`'s values into `values`: true when the next launch
  /// hands them to the device (publish), false when the node must be set from the host (not
  /// update-free, or its launch configuration changed).
  bool stage(std::uint32_t c, const ArgumentStore& values);
  /// Writes `arguments` (as many as root command `c`'s kernel takes, of its types) into
  /// `values` as `c`'s, and stages them. \pre holds(c). Inline: a frame's every write.
  void write(std::uint32_t c, ArgumentStore& values, const KernelArguments& arguments) {
    const std::uint32_t place = place_[c];
    const ArgumentStore::Slot first = values_[place].first;
    for (std::size_t i = 0; i < arguments.count; ++i) {  // of the recorded types: their sizes
      const KernelParam& param = arguments.params[i];
      copy_bytes(values.data(first + static_cast<ArgumentStore::Slot>(i)), param.value,
                 param.size);
    }
    mark_changed(place);
  }
  /// Teaches `lesson`'s slot where root command `c`'s arguments lie in `values`, so that its
  /// writer writes them and marks them changed itself, as write() does. \pre holds(c), and
  /// the slot's offsets are as many as `c`'s kernel has parameters.
  void teach(std::uint32_t c, ArgumentStore& values, const SlotLesson& lesson) noexcept;
  /// Whether updates staged values that no launch has handed to the device yet.
  bool pending() const noexcept { return generations_.staged != generations_.published; }
  /// Writes every value of `values` staged since a free block was last written into it, and
  /// returns that block: the one appliers read from now on. A block is free once it is not
  /// the newest and an applier has applied a newer one (launches of one executable run one
  /// after another, so no launch reads it any more); a new one is allocated when none is.
  const cuda::ArgumentBlock* publish(const ArgumentStore& values);
  /// Takes back the block publish() just returned, which no applier was pointed to: the
  /// values it holds are staged again.
  void withdraw() noexcept;
  /// The block appliers read (null before the first publish).
  const cuda::ArgumentBlock* newest() const noexcept;
  /// The pinned word appliers write the generation they applied to.
  unsigned long long* seen() const noexcept { return seen_.get(); }

 private:
  // A kernel's values: its parameters are consecutive slots, so consecutive bytes of the
  // store, which a block mirrors: one copy each.
  struct Values {
    ArgumentStore::Slot first;
    std::uint32_t store_at;  // bytes from the store's first value: the same in its copies
    std::uint32_t bytes;
    std::uint32_t data_at;  // in a block
  };
  struct Block {
    std::shared_ptr<void> memory;  // pinned
    unsigned long long generation;
  };
  // `bytes` copied: a value (most are 4 or 8: ints, floats, pointers) or a kernel's few
  // parameters (most often 16 or 24), inline for the common sizes.
  static void copy_bytes(void* to, const void* from, std::uint32_t bytes) noexcept {
    switch (bytes) {
      case 4: std::memcpy(to, from, 4); break;
      case 8: std::memcpy(to, from, 8); break;
      case 12: std::memcpy(to, from, 12); break;
      case 16: std::memcpy(to, from, 16); break;
      case 24: std::memcpy(to, from, 24); break;
      case 32: std::memcpy(to, from, 32); break;
      default: std::memcpy(to, from, bytes);
    }
  }
  cuda::ArgumentBlock* block_at(std::size_t b) const noexcept {
    return static_cast<cuda::ArgumentBlock*>(blocks_[b].memory.get());
  }
  std::size_t free_block();
  void mark_changed(std::uint32_t place) noexcept { changed_at_[place] = generations_.stage(); }

  std::vector<std::uint32_t> place_;     // per root command
  std::vector<std::uint32_t> commands_;  // per place: its root command
  std::vector<ArgumentStore::Slot> config_slot_;  // per place
  std::vector<LaunchConfig> config_;     // per place: as its node was last set from the host
  std::vector<unsigned long long> changed_at_;    // per place
  std::vector<Values> values_;                    // per place
  // The runs of parameters each applier call sets: parameters laid out alike in the store and
  // in the kernel's parameters share one (usually a kernel's all).
  std::vector<cuda::ArgumentEntry> runs_;
  std::size_t changed_at_offset_ = 0;  // in a block
  std::size_t block_bytes_ = 0;
  Generations generations_;  // staged values' and the newest block's
  std::vector<Block> blocks_;
  std::size_t newest_ = 0;  // blocks_[newest_], once a block is published
  unsigned long long withdrawn_published_ = 0;  // the published generation and newest_
                                                 // before publish()
  std::size_t withdrawn_newest_ = 0;
  std::shared_ptr<unsigned long long> seen_;
};

/// What one instantiation's applier reads beside its block, in pinned memory: the generation
/// it applied last, then its update-free nodes' device handles by place.
struct ApplierTable {
  std::shared_ptr<void> memory;
  unsigned long long* applied = nullptr;
  cudaGraphDeviceNode_t* nodes = nullptr;

  /// A table of `size` nodes, none applied yet.
  static ApplierTable of(std::size_t size);
};

/// The applier's kernel node, reading `block` (null: nothing to apply yet), with `table` and
/// the generation word `seen`.
class ApplierNode {
 public:
  ApplierNode(const cuda::ArgumentBlock* block, const ApplierTable& table,
              unsigned long long* seen);
  ApplierNode(const ApplierNode&) = delete;
  ApplierNode& operator=(const ApplierNode&) = delete;
  cuda::NodeSpec& spec() noexcept { return spec_; }

 private:
  const cuda::ArgumentBlock* block_;
  cudaGraphDeviceNode_t* nodes_;
  unsigned long long* applied_;
  unsigned long long* seen_;
  void* params_[4];
  cuda::NodeSpec spec_;
};

}  // namespace cmdgraph::detail
