// DeviceArguments: staging, the blocks the appliers read, and when a block is free again.
#include "backend/cuda_graph/device_arguments.hpp"

#include "cuda/graph_ops.hpp"
#include "cuda/runtime.hpp"

#include <cmdgraph/error.hpp>

#include <atomic>
#include <cstring>
#include <string>
#include <utility>

namespace cmdgraph::detail {
namespace {

std::shared_ptr<void> pinned(std::size_t bytes) {
  std::shared_ptr<void> memory(cuda::allocate_pinned(bytes), cuda::free_pinned);
  std::memset(memory.get(), 0, bytes);
  return memory;
}

constexpr std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }

LaunchConfig config_in(const ArgumentStore& values, ArgumentStore::Slot slot) {
  LaunchConfig config;
  std::memcpy(&config, values.data(slot), sizeof config);
  return config;
}

}  // namespace

DeviceArguments::DeviceArguments(const Plan& plan, const ArgumentStore& values)
    : place_(plan.size(), none) {
  const auto offset = [&values](ArgumentStore::Slot slot) {
    return static_cast<std::uint32_t>(static_cast<const std::byte*>(values.data(slot)) -
                                      static_cast<const std::byte*>(values.data(0)));
  };
  std::uint32_t data_bytes = 0;
  for (std::uint32_t c = 0; c < plan.size(); ++c) {
    const std::optional<KernelSlots> kernel = kernel_slots(plan.payload(c));
    if (!plan.command(c).hints.update_free || !kernel || kernel->param_count == 0) continue;
    const auto place = static_cast<std::uint32_t>(commands_.size());
    const std::string name = plan.name(c);
    const ArgumentStore::Slot first = kernel->first_param, last = first + kernel->param_count - 1;
    const std::uint32_t start = offset(first);
    for (std::uint32_t i = 0; i < kernel->param_count; ++i) {
      const cuda::ParameterPlace at = cuda::parameter_place(kernel->function, i, name);
      if (at.size != values.size(first + i)) {
        throw Error(errc::unsupported,
                    "command '" + name + "': parameter " + std::to_string(i) + " of its kernel " +
                        "takes " + std::to_string(at.size) + " bytes on the device, " +
                        std::to_string(values.size(first + i)) + " were recorded",
                    {name});
      }
      const std::uint32_t data_at = data_bytes + (offset(first + i) - start);
      cuda::ArgumentEntry* run = runs_.empty() ? nullptr : &runs_.back();
      if (i != 0 && data_at - run->data_at == at.offset - run->offset) {
        run->size = static_cast<unsigned>(at.offset - run->offset + at.size);  // laid out alike
      } else {
        runs_.push_back({data_at, place, static_cast<unsigned>(at.offset),
                         static_cast<unsigned>(at.size)});
      }
    }
    const std::uint32_t bytes = offset(last) + values.size(last) - start;
    values_.push_back({first, start, bytes, data_bytes});
    data_bytes += static_cast<std::uint32_t>(round_up(bytes, 8));
    place_[c] = place;
    commands_.push_back(c);
    config_slot_.push_back(kernel->config);
    config_.push_back(config_in(values, kernel->config));
    changed_at_.push_back(0);
  }
  if (commands_.empty()) return;
  changed_at_offset_ = sizeof(cuda::ArgumentBlock) + runs_.size() * sizeof(cuda::ArgumentEntry);
  const std::size_t data_at = changed_at_offset_ + commands_.size() * sizeof(unsigned long long);
  for (cuda::ArgumentEntry& run : runs_) run.data_at += static_cast<unsigned>(data_at);
  for (Values& v : values_) v.data_at += static_cast<std::uint32_t>(data_at);
  block_bytes_ = data_at + data_bytes;
  seen_ = std::static_pointer_cast<unsigned long long>(pinned(sizeof(unsigned long long)));
}

bool DeviceArguments::stage(std::uint32_t c, const ArgumentStore& values) {
  const std::uint32_t place = place_[c];
  if (place == none) return false;
  const LaunchConfig config = config_in(values, config_slot_[place]);
  if (config != config_[place]) {
    config_[place] = config;  // the host sets the whole node, arguments included
    return false;
  }
  mark_changed(place);
  return true;
}

void DeviceArguments::teach(std::uint32_t c, ArgumentStore& values,
                            const SlotLesson& lesson) noexcept {
  const std::uint32_t place = place_[c];
  const ArgumentStore::Slot first = values_[place].first;
  auto* base = static_cast<std::byte*>(values.data(first));
  for (std::size_t i = 0; i < lesson.offsets.size(); ++i) {
    const ArgumentStore::Slot slot = first + static_cast<ArgumentStore::Slot>(i);
    const auto* at = static_cast<const std::byte*>(values.data(slot));
    lesson.offsets[i] = static_cast<std::uint32_t>(at - base);
  }
  lesson.slot.learn(lesson.frame, lesson.key, base, generations_, changed_at_[place]);
}

const cuda::ArgumentBlock* DeviceArguments::newest() const noexcept {
  return generations_.published == 0 ? nullptr : block_at(newest_);
}

std::size_t DeviceArguments::free_block() {
  // Written by appliers on the device: a block older than the generation one applied is read
  // by no launch (they run one after another), unless it is the newest, which later launches
  // read.
  const unsigned long long seen = std::atomic_ref<unsigned long long>(*seen_).load(
      std::memory_order_acquire);
  for (std::size_t b = 0; b < blocks_.size(); ++b) {
    if (b != newest_ && blocks_[b].generation < seen) return b;
  }
  blocks_.push_back({pinned(block_bytes_), 0});
  return blocks_.size() - 1;
}

const cuda::ArgumentBlock* DeviceArguments::publish(const ArgumentStore& values) {
  const std::size_t b = free_block();
  auto* bytes = static_cast<std::byte*>(blocks_[b].memory.get());
  auto* head = reinterpret_cast<cuda::ArgumentBlock*>(bytes);
  auto* changed = reinterpret_cast<unsigned long long*>(bytes + changed_at_offset_);
  const unsigned long long filled = blocks_[b].generation;  // 0: a block never written
  if (filled == 0) {
    std::memcpy(head + 1, runs_.data(), runs_.size() * sizeof(cuda::ArgumentEntry));
    head->parameters = static_cast<unsigned>(runs_.size());
  }
  const auto* store = static_cast<const std::byte*>(values.data(0));
  for (std::size_t place = 0; place < commands_.size(); ++place) {
    if (filled != 0 && changed_at_[place] <= filled) continue;  // the block holds them already
    changed[place] = changed_at_[place];
    const Values& v = values_[place];
    copy_bytes(bytes + v.data_at, store + v.store_at, v.bytes);
  }
  blocks_[b].generation = generations_.staged;
  withdrawn_published_ = std::exchange(generations_.published, generations_.staged);
  withdrawn_newest_ = std::exchange(newest_, b);
  // The device reads the block once the launch that follows is enqueued; the generation is
  // written last, a release (not a fence: ThreadSanitizer cannot model fences).
  std::atomic_ref<unsigned long long>(head->generation).store(generations_.staged,
                                                              std::memory_order_release);
  return head;
}

void DeviceArguments::withdraw() noexcept {
  blocks_[newest_].generation = 0;  // written again in full when next taken
  generations_.published = withdrawn_published_;
  newest_ = withdrawn_newest_;
}

ApplierTable ApplierTable::of(std::size_t size) {
  ApplierTable table;
  table.memory = pinned(sizeof(unsigned long long) + size * sizeof(cudaGraphDeviceNode_t));
  table.applied = static_cast<unsigned long long*>(table.memory.get());
  table.nodes = reinterpret_cast<cudaGraphDeviceNode_t*>(table.applied + 1);
  return table;
}

ApplierNode::ApplierNode(const cuda::ArgumentBlock* block, const ApplierTable& table,
                         unsigned long long* seen)
    : block_(block), nodes_(table.nodes), applied_(table.applied), seen_(seen),
      params_{&block_, &nodes_, &applied_, &seen_},
      spec_(cuda::NodeSpec::of(cudaGraphNodeTypeKernel)) {
  spec_.params.kernel.func = const_cast<void*>(cuda::argument_applier());
  spec_.params.kernel.gridDim = dim3(1);
  spec_.params.kernel.blockDim = dim3(256);
  spec_.params.kernel.kernelParams = params_;
}

}  // namespace cmdgraph::detail
