// ArgumentStore: the owned, aligned bytes of every value update() may change: kernel arguments
// and launch configurations, parallel_for functors and counts, copy and fill ranges. Each
// executable copies its recording's store, so its updates change its own launches alone.
#pragma once

#include <cmdgraph/detail/specs.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>

namespace cmdgraph::detail {

class ArgumentStore {
 public:
  using Slot = std::uint32_t;

  ArgumentStore() = default;
  ArgumentStore(const ArgumentStore& other);
  ArgumentStore& operator=(const ArgumentStore& other);
  ArgumentStore(ArgumentStore&&) noexcept = default;
  ArgumentStore& operator=(ArgumentStore&&) noexcept = default;

  /// Copies `param` in; returns its slot.
  Slot add(const KernelParam& param);
  /// Copies a trivially copyable value in; returns its slot.
  template <class T>
  Slot add_value(const T& value) {
    static_assert(std::is_trivially_copyable_v<T>);
    return add(kernel_param(value));  // its padding cleared, where it has any
  }
  /// The value in `slot`, which add_value<T> stored.
  template <class T>
  const T& get(Slot slot) const noexcept {
    return *static_cast<const T*>(data(slot));
  }
  /// Overwrites slot `slot` with a value of the same size.
  void assign(Slot slot, const void* value) noexcept;
  /// Whether slots [first, end) hold the same bytes here and in `other`, whose slots there
  /// hold values of the same types as these.
  bool same_bytes(const ArgumentStore& other, Slot first, Slot end) const noexcept;
  /// Room for `slots` values of `bytes` in all, so a store filled again as the last one was
  /// (a frame recorded anew) grows no more.
  void reserve_like(const ArgumentStore& other);
  /// Drops every slot from `count` on (what a command refused as it was recorded stored).
  void truncate(std::size_t count) noexcept;

  void* data(Slot slot) const noexcept { return bytes_.get() + slots_[slot].offset; }
  std::uint32_t size(Slot slot) const noexcept { return slots_[slot].size; }
  std::size_t slot_count() const noexcept { return slots_.size(); }
  std::size_t bytes_used() const noexcept { return used_; }

 private:
  // Alignment of the whole block; every value is placed at a multiple of its own alignment.
  static constexpr std::size_t block_align = 64;
  struct AlignedDelete {
    void operator()(std::byte* p) const noexcept {
      ::operator delete[](p, std::align_val_t{block_align});
    }
  };
  struct Entry {
    std::uint32_t offset;
    std::uint32_t size;
  };
  void reserve(std::size_t bytes);

  std::unique_ptr<std::byte[], AlignedDelete> bytes_;
  std::size_t capacity_ = 0;
  std::size_t used_ = 0;
  std::vector<Entry> slots_;
};

}  // namespace cmdgraph::detail
