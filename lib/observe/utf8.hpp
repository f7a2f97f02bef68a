// valid_utf8: names as written into DOT and trace JSON, which must be UTF-8: well-formed
// sequences are kept, every byte that starts no valid sequence becomes U+FFFD.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace cmdgraph::detail {

inline std::string valid_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  std::size_t i = 0;
  // The length of the well-formed sequence at i (no overlong forms, surrogates or values past
  // U+10FFFF), or 0.
  auto sequence = [&]() -> std::size_t {
    const auto b = static_cast<unsigned char>(s[i]);
    const std::size_t n = b < 0x80          ? 1
                          : (b >> 5) == 6   ? 2
                          : (b >> 4) == 14  ? 3
                          : (b >> 3) == 30  ? 4
                                            : 0;
    if (n <= 1 || i + n > s.size()) return n == 1 ? 1 : 0;
    std::uint32_t cp = b & (0x7fu >> n);
    for (std::size_t k = 1; k < n; ++k) {
      const auto c = static_cast<unsigned char>(s[i + k]);
      if ((c >> 6) != 2) return 0;
      cp = cp << 6 | (c & 0x3fu);
    }
    const std::uint32_t least = n == 2 ? 0x80 : n == 3 ? 0x800 : 0x10000;
    if (cp < least || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
    return n;
  };
  while (i < s.size()) {
    const std::size_t n = sequence();
    if (n == 0) {
      out += "\xef\xbf\xbd";  // U+FFFD REPLACEMENT CHARACTER
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

}  // namespace cmdgraph::detail
