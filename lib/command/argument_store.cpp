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

bool ArgumentStore::same_bytes(const ArgumentStore& other, Slot first, Slot end) const noexcept {
  if (first >= end) return true;
  const std::uint32_t begin = slots_[first].offset, last = slots_[end - 1].offset;
  if (other.slots_[first].offset == begin && other.slots_[end - 1].offset == last) {
    // Laid out alike (the same values recorded in the same order, zeros between them).
    return std::memcmp(data(first), other.data(first), last + slots_[end - 1].size - begin) == 0;
  }
  for (Slot s = first; s < end; ++s) {
    if (std::memcmp(data(s), other.data(s), slots_[s].size) != 0) return false;
  }
  return true;
}

}  // namespace cmdgraph::detail
