// TransientRange: the placeholder of one transient allocation (CommandBuffer::alloc). Recorded
// arguments point into it before the memory exists; an executable rewrites them to where its
// transient really is. Each range is reserved address space no real allocation can share.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace cmdgraph::detail {

class TransientRange {
 public:
  /// Reserves (never backs) room for `bytes` bytes of `element_size`-byte elements, plus a page
  /// after them, so a pointer one past the end names this range alone, for the recording
  /// whose id is `owner`. Throws Error(out_of_memory) when the address space cannot be
  /// reserved.
  TransientRange(std::size_t bytes, std::uint32_t element_size, std::uint64_t owner);
  ~TransientRange();
  TransientRange(const TransientRange&) = delete;
  TransientRange& operator=(const TransientRange&) = delete;

  std::uintptr_t base() const noexcept { return base_; }
  std::size_t bytes() const noexcept { return bytes_; }
  std::uint32_t element_size() const noexcept { return element_size_; }
  void* data() const noexcept { return reinterpret_cast<void*>(base_); }
  /// True when `word` points into the range or one past its end.
  bool holds(std::uintptr_t word) const noexcept { return word - base_ <= bytes_; }

 private:
  std::uintptr_t base_ = 0;
  std::size_t bytes_ = 0;
  std::size_t reserved_ = 0;
  std::uint32_t element_size_ = 1;
};

/// A live range's extent, as the registry of every live range (of any recording) reports it.
struct TransientExtent {
  std::uintptr_t base;
  std::size_t bytes;
};
/// Every live range, by address.
std::vector<TransientExtent> live_transients();
/// Calls visit(offset, word) for every pointer-sized word of `bytes` bytes at `data` that could
/// hold a pointer. Pointers sit at multiples of 8 bytes in anything holding one (its alignment
/// is 8), and a value is stored at a multiple of its own alignment: a value starting elsewhere
/// holds none.
template <class Visit>
void for_each_word(const void* data, std::size_t bytes, Visit&& visit) {
  if (reinterpret_cast<std::uintptr_t>(data) % alignof(std::uintptr_t) != 0) return;
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t at = 0; at + sizeof(std::uintptr_t) <= bytes; at += sizeof(std::uintptr_t)) {
    std::uintptr_t word;
    std::memcpy(&word, p + at, sizeof(word));
    visit(static_cast<std::uint32_t>(at), word);
  }
}

/// The id of the recording that owns the live range `word` points into (or one past), or 0.
std::uint64_t transient_owner(std::uintptr_t word);
/// False while no range lives: argument scans can be skipped.
bool any_live_transients() noexcept;
/// How many ranges live, for a check made without a call (FrameWords::live_transients).
const std::atomic<std::size_t>& live_transient_count() noexcept;

}  // namespace cmdgraph::detail
