// ArgumentStore: aligned bump storage that copies as a whole.
#include "command/argument_store.hpp"

#include <cmdgraph/error.hpp>

#include <algorithm>
#include <cstring>
#include <new>

namespace cmdgraph::detail {

ArgumentStore::ArgumentStore(const ArgumentStore& other) : slots_(other.slots_) {
  reserve(other.used_);
  if (other.used_) std::memcpy(bytes_.get(), other.bytes_.get(), other.used_);
  used_ = other.used_;
}

ArgumentStore& ArgumentStore::operator=(const ArgumentStore& other) {
  if (this != &other) {
    ArgumentStore copy(other);
    *this = std::move(copy);
  }
  return *this;
}

void ArgumentStore::reserve(std::size_t bytes) {
  if (bytes <= capacity_) return;
  const std::size_t capacity = std::max<std::size_t>({bytes, 2 * capacity_, 256});
  std::unique_ptr<std::byte[], AlignedDelete> grown(
      static_cast<std::byte*>(::operator new[](capacity, std::align_val_t{block_align})));
  if (used_) std::memcpy(grown.get(), bytes_.get(), used_);
  bytes_ = std::move(grown);
  capacity_ = capacity;
}

void ArgumentStore::reserve(std::size_t slots, std::size_t bytes) {
  slots_.reserve(slots);
  reserve(bytes);
}

void ArgumentStore::refuse_alignment() {
  throw Error(errc::invalid_argument, "argument alignment above 64 bytes is not supported");
}

void ArgumentStore::truncate(std::size_t count) noexcept {
  if (count >= slots_.size()) return;
  used_ = slots_[count].offset;
  slots_.resize(count);
}

void ArgumentStore::assign(Slot slot, const void* value) noexcept {
  std::memcpy(data(slot), value, slots_[slot].size);
}

bool ArgumentStore::laid_out_alike(const ArgumentStore& other, Slot first,
                                    Slot end) const noexcept {
  return other.slots_[first].offset == slots_[first].offset &&
         other.slots_[end - 1].offset == slots_[end - 1].offset;
}

void ArgumentStore::assign(const ArgumentStore& other, Slot first, Slot end) noexcept {
  if (first >= end) return;
  if (laid_out_alike(other, first, end)) {
    const std::span<std::byte> to = bytes_of(first, end);
    std::memcpy(to.data(), other.data(first), to.size());
    return;
  }
  for (Slot s = first; s < end; ++s) assign(s, other.data(s));
}

bool ArgumentStore::same_bytes(const ArgumentStore& other, Slot first, Slot end) const noexcept {
  if (first >= end) return true;
  if (laid_out_alike(other, first, end)) {
    const std::span<const std::byte> mine = bytes_of(first, end);
    return std::memcmp(mine.data(), other.data(first), mine.size()) == 0;
  }
  for (Slot s = first; s < end; ++s) {
    if (std::memcmp(data(s), other.data(s), slots_[s].size) != 0) return false;
  }
  return true;
}

}  // namespace cmdgraph::detail
