// ArgumentStore: the owned, aligned bytes of every value update() may change: kernel arguments
// and launch configurations, parallel_for functors and counts, copy and fill ranges. Each
// executable copies its recording's store, so its updates change its own launches alone.
#pragma once

#include <cmdgraph/detail/specs.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
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

  /// Copies `param` in; returns its slot. Inline: recording a kernel adds a few small values,
  /// and a call and a division each cost more than the copy.
  Slot add(const KernelParam& param) {
    const std::size_t align = param.align ? param.align : 1;  // an alignof: a power of two
    if (align > block_align) refuse_alignment();
    const std::size_t offset = (used_ + align - 1) & ~(align - 1);
    const std::size_t end = offset + param.size;
    if (end > capacity_ || capacity_ == 0) reserve(end ? end : 1);  // never at a null block
    std::byte* at = bytes_.get() + offset;
    // Zeros between values: stores laid out alike hold the same bytes wherever their values
    // do (same_bytes compares them as one range).
    for (std::size_t b = used_; b < offset; ++b) bytes_[b] = std::byte{0};
    copy_value(at, param.value, param.size);
    if (param.clear_padding) param.clear_padding(at);
    slots_.push_back({static_cast<std::uint32_t>(offset), param.size});
    used_ = end;
    return static_cast<Slot>(slots_.size() - 1);
  }
  /// Copies a kernel's arguments in, in order, into consecutive slots; returns the first.
  /// Inline, as add(): laid out already (KernelArguments::image), they cost one copy.
  Slot add_all(const KernelArguments& arguments) {
    const auto first = static_cast<Slot>(slots_.size());
    if (!arguments.image || arguments.image_align > block_align) {  // one by one, as add() does
      for (std::size_t i = 0; i < arguments.count; ++i) add(arguments.params[i]);
      return first;
    }
    const std::size_t align = arguments.image_align;
    const std::size_t base = (used_ + align - 1) & ~(align - 1);
    const std::size_t end = base + arguments.image_bytes;
    if (end > capacity_ || capacity_ == 0) reserve(end ? end : 1);
    if (slots_.capacity() < first + arguments.count) {
      slots_.reserve(std::max<std::size_t>(first + arguments.count, 2 * slots_.capacity()));
    }
    for (std::size_t b = used_; b < base; ++b) bytes_[b] = std::byte{0};
    std::memcpy(bytes_.get() + base, arguments.image, arguments.image_bytes);
    for (std::size_t i = 0; i < arguments.count; ++i) {
      const auto at = static_cast<const std::byte*>(arguments.params[i].value) - arguments.image;
      slots_.push_back({static_cast<std::uint32_t>(base + at), arguments.params[i].size});
    }
    used_ = end;
    return first;
  }
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
  /// Overwrites slots [first, end) with `other`'s, whose slots there hold values of the same
  /// types: one copy where both are laid out alike, as same_bytes compares them.
  void assign(const ArgumentStore& other, Slot first, Slot end) noexcept;
  /// The bytes of slots [first, end), the zeros between them included: consecutive slots are
  /// consecutive bytes, which one copy saves and gives back.
  std::span<std::byte> bytes_of(Slot first, Slot end) noexcept {
    if (first >= end) return {};
    const std::uint32_t begin = slots_[first].offset;
    return {bytes_.get() + begin, slots_[end - 1].offset + slots_[end - 1].size - begin};
  }
  std::span<const std::byte> bytes_of(Slot first, Slot end) const noexcept {
    return const_cast<ArgumentStore&>(*this).bytes_of(first, end);
  }
  /// Whether slots [first, end) hold the same bytes here and in `other`, whose slots there
  /// hold values of the same types as these.
  bool same_bytes(const ArgumentStore& other, Slot first, Slot end) const noexcept;
  /// Whether every slot lies at the same offset here and in `other`, whose slots hold values
  /// of the same types as these: then any range of slots compares as one range of bytes.
  bool laid_out_alike(const ArgumentStore& other) const noexcept {
    return other.slots_.size() == slots_.size() && other.used_ == used_ &&
           (slots_.empty() || laid_out_alike(other, 0, static_cast<Slot>(slots_.size())));
  }
  /// Room for `slots` values of `bytes` in all, so a store filled again as the last one was
  /// (a frame recorded anew) grows no more.
  void reserve(std::size_t slots, std::size_t bytes);
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
  [[noreturn]] static void refuse_alignment();
  // Whether slots [first, end) lie at the same offsets here and in `other` (the same values
  // recorded in the same order, zeros between them): then they compare and copy as one range.
  // \pre first < end.
  bool laid_out_alike(const ArgumentStore& other, Slot first, Slot end) const noexcept;
  // A copy of a size the compiler knows for the sizes arguments mostly have.
  static void copy_value(std::byte* to, const void* from, std::size_t size) noexcept {
    switch (size) {
      case 4: std::memcpy(to, from, 4); break;
      case 8: std::memcpy(to, from, 8); break;
      case 16: std::memcpy(to, from, 16); break;
      case 32: std::memcpy(to, from, 32); break;  // a LaunchConfig
      default: if (size) std::memcpy(to, from, size);
    }
  }

  std::unique_ptr<std::byte[], AlignedDelete> bytes_;
  std::size_t capacity_ = 0;
  std::size_t used_ = 0;
  std::vector<Entry> slots_;
};

}  // namespace cmdgraph::detail
