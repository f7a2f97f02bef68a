// to_view: the View behind anything a command accepts as memory (a View, Buffer, HostBuffer).
#pragma once

#include <cmdgraph/detail/specs.hpp>
#include <cmdgraph/memory.hpp>

#include <cstring>
#include <type_traits>
#include <utility>

namespace cmdgraph::detail {

template <class T>
View<T> to_view(const View<T>& v) noexcept {
  return v;
}
template <class T>
View<T> to_view(const OwnedMemory<T>& m) noexcept {
  return m.view();
}

template <class T>
struct ViewElement;
template <class T>
struct ViewElement<View<T>> {
  using type = T;
};
/// The element type of anything to_view accepts.
template <class X>
using element_of = typename ViewElement<decltype(to_view(std::declval<const X&>()))>::type;

/// The spec of a copy of `count` elements from `src` to `dst`; the types are checked here.
template <class Dst, class Src>
CopySpec copy_spec(const Dst& dst, const Src& src, std::size_t count) {
  using T = element_of<Dst>;
  static_assert(!std::is_const_v<T>, "copy destination is const");
  static_assert(std::is_same_v<std::remove_const_t<element_of<Src>>, T>,
                "copy between different element types");
  return {memory_range(to_view(dst), count), memory_range(to_view(src), count)};
}

/// The spec of a fill of `count` elements of `dst` with `value` converted to the element type.
template <class Dst, class V>
FillSpec fill_spec(const Dst& dst, const V& value, std::size_t count) {
  using T = element_of<Dst>;
  static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4,
                "fill takes 1, 2 or 4-byte elements (CUDA memset node widths)");
  const T converted = static_cast<T>(value);
  std::uint32_t bits = 0;
  std::memcpy(&bits, &converted, sizeof(T));
  return {memory_range(to_view(dst), count), bits, sizeof(T)};
}

/// The element types a memory operation takes.
template <class T>
concept MemoryOpValue = std::is_same_v<T, std::uint32_t> || std::is_same_v<T, std::uint64_t>;

/// The values of a memory operation on the first element of `target`.
template <class Target>
ValueSpec value_spec(const Target& target, element_of<Target> value, bool waits,
                     ValueCompare compare = ValueCompare::at_least) {
  static_assert(MemoryOpValue<element_of<Target>>,
                "memory operations take std::uint32_t or std::uint64_t values");
  return {memory_range(to_view(target), 1), value, waits, compare};
}

/// An indirect command's values: the first element of `source`, read as `form` says.
template <class Source>
IndirectSpec indirect_spec(const Source& source, IndirectForm form, const LaunchConfig& limit,
                           std::uint64_t max_count) {
  return {memory_range(to_view(source), 1), limit, max_count, form};
}

}  // namespace cmdgraph::detail
