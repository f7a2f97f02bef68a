// ByteReader: turns a fuzzer's input into bounded choices; an exhausted input reads as zeros.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace cmdgraph::fuzz {

class ByteReader {
 public:
  ByteReader(const std::uint8_t* data, std::size_t size) noexcept : data_(data), size_(size) {}

  bool exhausted() const noexcept { return position_ >= size_; }
  std::uint8_t byte() noexcept { return exhausted() ? 0 : data_[position_++]; }
  /// A value in [0, bound); 0 when bound is 0.
  std::size_t below(std::size_t bound) noexcept { return bound == 0 ? 0 : byte() % bound; }
  bool flip() noexcept { return (byte() & 1) != 0; }
  /// A short name, possibly empty, possibly repeated across commands.
  std::string name() {
    static constexpr const char* names[] = {"", "a", "b", "load", "a", "x->y", "'q'", "\xff\xfe"};
    return names[below(sizeof(names) / sizeof(names[0]))];
  }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t position_ = 0;
};

}  // namespace cmdgraph::fuzz
