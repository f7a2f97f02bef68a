// What the collective commands hand to the library: the element type as NCCL numbers it, chosen
// from the buffers' type at compile time, and plain descriptions of one collective or one peer
// transfer (no NCCL types, so no NCCL header is needed to record them).
#pragma once

#include <cmdgraph/detail/specs.hpp>
#include <cmdgraph/detail/views.hpp>
#include <cmdgraph/memory.hpp>

#include <cstddef>
#include <cstdint>
#include <type_traits>

// CUDA's own 16-bit floating-point types (cuda_fp16.h, cuda_bf16.h declare them the same way):
// collectives over them need their definitions only where the user has them.
struct __half;
struct __nv_bfloat16;

namespace cmdgraph {

/// How a reduction (all_reduce, reduce, reduce_scatter) combines the ranks' elements.
enum class ReduceOp : unsigned char {
  sum,      ///< the sum
  product,  ///< the product
  max,      ///< the largest
  min,      ///< the smallest
  average,  ///< the sum divided by the number of ranks (NCCL's ncclAvg)
};

}  // namespace cmdgraph

namespace cmdgraph::detail {

/// NCCL's element types, numbered as ncclDataType_t numbers them (lib/cuda checks that).
enum class ElementType : std::uint8_t {
  int8 = 0, uint8 = 1, int32 = 2, uint32 = 3, int64 = 4, uint64 = 5,
  float16 = 6, float32 = 7, float64 = 8, bfloat16 = 9,
};

/// The NCCL element type of T; undefined (so a collective over T does not compile) for a type
/// NCCL does not carry.
template <class T>
struct ElementTypeOf;
template <ElementType E>
struct ElementTypeIs {
  static constexpr ElementType value = E;
};
template <>
struct ElementTypeOf<char>
    : ElementTypeIs<std::is_signed_v<char> ? ElementType::int8 : ElementType::uint8> {};
template <> struct ElementTypeOf<signed char> : ElementTypeIs<ElementType::int8> {};
template <> struct ElementTypeOf<unsigned char> : ElementTypeIs<ElementType::uint8> {};
template <> struct ElementTypeOf<int> : ElementTypeIs<ElementType::int32> {};
template <> struct ElementTypeOf<unsigned> : ElementTypeIs<ElementType::uint32> {};
template <>
struct ElementTypeOf<long>
    : ElementTypeIs<sizeof(long) == 8 ? ElementType::int64 : ElementType::int32> {};
template <>
struct ElementTypeOf<unsigned long>
    : ElementTypeIs<sizeof(long) == 8 ? ElementType::uint64 : ElementType::uint32> {};
template <> struct ElementTypeOf<long long> : ElementTypeIs<ElementType::int64> {};
template <> struct ElementTypeOf<unsigned long long> : ElementTypeIs<ElementType::uint64> {};
template <> struct ElementTypeOf<float> : ElementTypeIs<ElementType::float32> {};
template <> struct ElementTypeOf<double> : ElementTypeIs<ElementType::float64> {};
template <> struct ElementTypeOf<__half> : ElementTypeIs<ElementType::float16> {};
template <> struct ElementTypeOf<__nv_bfloat16> : ElementTypeIs<ElementType::bfloat16> {};

/// An element type NCCL carries (const or not).
template <class T>
concept CollectiveElement = requires { ElementTypeOf<std::remove_const_t<T>>::value; };

/// Which NCCL operation a collective command runs.
enum class CollectiveOp : std::uint8_t {
  all_reduce, broadcast, reduce, all_gather, reduce_scatter,
  exchange,  ///< grouped sends and receives: `count` TransferSpecs follow the spec
};

/// One collective. `send` and `recv` span whole views when recorded; the library narrows them
/// to what the operation touches once it knows the communicator's size.
struct CollectiveSpec {
  CollectiveOp op;
  ElementType type;
  ReduceOp reduce;
  int root;           // broadcast and reduce; -1 otherwise
  std::size_t count;  // NCCL's count (per rank for all_gather and reduce_scatter); transfers
                      // for exchange
  MemoryRange send, recv;
};

/// One send or receive of an exchange; `memory` spans the whole view until narrowed to `count`.
struct TransferSpec {
  bool sends;
  int peer;
  ElementType type;
  std::size_t count;
  MemoryRange memory;
};

/// The spec of collective `op` from `send` to `recv`; the element types are checked here.
template <class Send, class Recv>
CollectiveSpec collective_spec(CollectiveOp op, const Send& send, const Recv& recv,
                               std::size_t count, ReduceOp reduce, int root) {
  using T = element_of<Recv>;
  static_assert(!std::is_const_v<T>, "a collective's destination is const");
  static_assert(std::is_same_v<std::remove_const_t<element_of<Send>>, T>,
                "a collective's source and destination hold different element types");
  static_assert(CollectiveElement<T>,
                "NCCL carries 8-, 32- and 64-bit integers, __half, __nv_bfloat16, float and "
                "double");
  const auto s = to_view(send);
  const auto r = to_view(recv);
  return {op, ElementTypeOf<T>::value, reduce, root, count, memory_range(s, s.size()),
          memory_range(r, r.size())};
}

/// The spec of a transfer of `count` elements of `memory` to (`Sends`) or from rank `peer`.
template <bool Sends, class Memory>
TransferSpec transfer_spec(int peer, const Memory& memory, std::size_t count) {
  using T = element_of<Memory>;
  static_assert(Sends || !std::is_const_v<T>, "recv_from into const memory");
  static_assert(CollectiveElement<T>,
                "NCCL carries 8-, 32- and 64-bit integers, __half, __nv_bfloat16, float and "
                "double");
  const auto v = to_view(memory);
  return {Sends, peer, ElementTypeOf<std::remove_const_t<T>>::value, count,
          memory_range(v, v.size())};
}

}  // namespace cmdgraph::detail
