// What the recording templates hand to the library: plain descriptions of one command each,
// with every value a CUDA lowering needs and no CUDA types.
#pragma once

#include <cmdgraph/command.hpp>
#include <cmdgraph/detail/native.hpp>
#include <cmdgraph/memory.hpp>
#include <cmdgraph/portable.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <type_traits>
#include <typeinfo>
#include <utility>

namespace cmdgraph::detail {

/// One kernel parameter, already converted to the parameter's own type.
struct KernelParam {
  const void* value;
  std::uint32_t size;
  std::uint32_t align;
  /// Zeroes the padding of a stored copy of the value; null when it has none or the compiler
  /// cannot say where it is. Equal values then store equal bytes, which is how an update by a
  /// re-recorded buffer finds what changed (a value with padding left counts as changed).
  void (*clear_padding)(void*) = nullptr;
};

/// A kernel's arguments, each converted to its parameter's type.
struct KernelArguments {
  const KernelParam* params;
  std::size_t count;
  const std::type_info* signature;  // typeid(void (*)(P...)): what typed updates must match
  /// Where the values lie as a recording stores them, when they do (else null): one after
  /// another, each at a multiple of its alignment from `image` (of alignment `image_align`),
  /// zeros between them and in their padding. `params` point into it. One copy records them.
  const std::byte* image = nullptr;
  std::uint32_t image_bytes = 0;
  std::uint32_t image_align = 1;
};

struct KernelSpec {
  const void* function;  // the __global__ function's host stub address
  LaunchConfig config;
  KernelArguments arguments;
};

/// Runs a parallel_for functor over [begin, end) on the calling thread.
using HostInvoke = void (*)(const void* functor, std::size_t begin, std::size_t end);

/// A parallel_for's new functor and, unless `count` is null, its new range (an update).
struct ParallelForValues {
  KernelParam functor;
  const std::size_t* count;
  const std::type_info* type;  // typeid(F): the functor type recorded
};

struct ParallelForSpec {
  std::size_t count;
  KernelParam functor;       // stored like a kernel parameter: it is one on the GPU
  HostInvoke host;           // null when the functor has no host version
  const void* device_kernel; // null when not recorded in a CUDA translation unit
  const std::type_info* type;  // typeid(F): what typed updates must match
};

/// Evaluates a condition (1 when it holds, else 0) or a selector (selector_value of what it
/// returns) on the calling thread: the value a conditional node's handle gets on CUDA.
using HostCondition = std::uint32_t (*)(const void* condition);

/// What a selector's value `v` sets a switch's handle to: `v` when it names a body (0 up to,
/// not including, the body count), and a value past every body for a negative `v` or one past
/// 32 bits, which a plain conversion would wrap onto a body.
template <class V>
CMDGRAPH_HOST_DEVICE constexpr std::uint32_t selector_value(V v) noexcept {
  constexpr std::uint32_t none = 0xFFFFFFFFu;
  if constexpr (std::is_signed_v<V>) {
    if (v < 0) return none;
  }
  if constexpr (sizeof(V) > sizeof(std::uint32_t)) {
    if (static_cast<std::make_unsigned_t<V>>(v) > none) return none;
  }
  return static_cast<std::uint32_t>(v);
}

struct ConditionSpec {
  KernelParam condition;      // stored like a kernel parameter: it is one on the GPU
  HostCondition host;         // null when the functor has no host version
  const void* device_kernel;  // null when not recorded in a CUDA translation unit
};

/// What CommandBuffer::alloc recorded: its command and its placeholder address.
struct Allocation {
  CommandRef command;
  void* data;
};

/// A range of memory, type-erased.
// The specs a command stores hold no padding: equal values are equal bytes, which is how an
// update by a re-recorded buffer finds the commands whose values changed (plan/compare).
struct MemoryRange {
  void* data;
  std::size_t bytes;     // what the command touches (meaningless unless count fits capacity)
  std::size_t capacity;  // the view's whole size, to catch overruns when recorded or updated
  std::size_t count;         // the command's count, in elements, as given
  std::size_t element_size;  // bytes per element
  const void* origin;        // where the view was cut from (View::origin), for hazard errors
  int device;
  MemorySpace space;
  unsigned char zero[3] = {};  // what would be padding, zeroed
};

/// How an indirect command reads what it runs as it runs: a kernel's grid (a DispatchSize), a
/// parallel_for's count, or a flag (a std::uint32_t) that runs the kernel's recorded grid or
/// the parallel_for's recorded count when it is not 0, and nothing when it is.
enum class IndirectForm : std::uint32_t { grid, count, flag_grid, flag_count };
/// True for the forms of a parallel_for (its kernel loops to a count parameter).
constexpr bool runs_items(IndirectForm form) noexcept {
  return form == IndirectForm::count || form == IndirectForm::flag_count;
}
/// True for the forms a flag enables.
constexpr bool reads_flag(IndirectForm form) noexcept {
  return form == IndirectForm::flag_grid || form == IndirectForm::flag_count;
}

/// An indirect command's values: where it reads from, and its limits.
struct IndirectSpec {
  MemoryRange source;       // one DispatchSize (grid), one std::uint32_t or std::uint64_t
                            // (count), one std::uint32_t (a flag)
  LaunchConfig limit;       // grid, flag_grid: the largest (or the) grid, the block and the
                            // shared memory
  std::uint64_t max_count;  // count: the most items a run covers; flag_count: the items
  IndirectForm form;
  std::uint32_t zero = 0;   // what would be padding, zeroed
};

/// What CommandBuffer::launch_indirect and parallel_for_indirect hand to the library.
struct IndirectRecord {
  IndirectSpec spec;
  const void* function;       // the kernel's host stub, or the parallel_for's device kernel
                              // (null when recorded outside a CUDA translation unit)
  HostInvoke host;            // a parallel_for's host version (null for a kernel, or none)
  KernelArguments arguments;  // the kernel's, or the parallel_for's functor alone
};

struct CopySpec {
  MemoryRange dst;
  MemoryRange src;
};

struct FillSpec {
  MemoryRange dst;
  std::uint32_t value;      // the element's bits, zero-extended
  std::uint32_t element_size;  // 1, 2 or 4
};

/// Values handed to the library type-erased: an update's new values, which the command table
/// takes only as the types the command's kind is updated by.
class CommandValues {
 public:
  template <class V>
  static CommandValues of(const V& values) noexcept {
    return CommandValues(typeid(V), &values);
  }
  /// The values when they are a V, else null.
  template <class V>
  const V* as() const noexcept {
    return *type_ == typeid(V) ? static_cast<const V*>(data_) : nullptr;
  }

 private:
  CommandValues(const std::type_info& type, const void* data) noexcept
      : type_(&type), data_(data) {}
  const std::type_info* type_;
  const void* data_;
};

/// A memory operation's values: the value at `target` (one element of 4 or 8 bytes) written,
/// or waited for as `compare` says.
struct ValueSpec {
  MemoryRange target;
  std::uint64_t value;
  bool waits;              // else a write
  ValueCompare compare;    // when it waits
  unsigned char zero[6] = {};  // what would be padding, zeroed
};

static_assert(std::has_unique_object_representations_v<CopySpec> &&
              std::has_unique_object_representations_v<FillSpec> &&
              std::has_unique_object_representations_v<ValueSpec> &&
              std::has_unique_object_representations_v<IndirectSpec>);

/// A type-erased host callable; the recording and every executable share one instance.
class HostTask {
 public:
  virtual ~HostTask() = default;
  virtual void run() = 0;
};

/// A type-erased callable that enqueues library work on a CUDA stream.
class CaptureTask {
 public:
  virtual ~CaptureTask() = default;
  virtual void run(NativeStream stream) = 0;
};

/// A host command's callable `F`, behind HostTask.
template <class F>
class HostTaskOf final : public HostTask {
 public:
  explicit HostTaskOf(F f) : f_(std::move(f)) {}
  void run() override { std::invoke(f_); }

 private:
  F f_;
};

/// A capture command's callable `F`, behind CaptureTask.
template <class F>
class CaptureTaskOf final : public CaptureTask {
 public:
  explicit CaptureTaskOf(F f) : f_(std::move(f)) {}
  void run(NativeStream stream) override { std::invoke(f_, stream); }

 private:
  F f_;
};

/// KernelParam::clear_padding for a P.
template <class P>
constexpr void (*padding_clearer() noexcept)(void*) {
#if defined(__has_builtin)
#if __has_builtin(__builtin_clear_padding)
  if constexpr (!std::has_unique_object_representations_v<P>) {
    return [](void* p) { __builtin_clear_padding(static_cast<P*>(p)); };
  }
#endif
#endif
  return nullptr;
}

template <class P>
KernelParam kernel_param(const P& value) noexcept {
  return {&value, static_cast<std::uint32_t>(sizeof(P)), static_cast<std::uint32_t>(alignof(P)),
          padding_clearer<P>()};
}

/// Where values of types P... lie laid out as a recording stores them (KernelArguments::image):
/// each at the first multiple of its alignment after the one before.
template <class... P>
struct ParameterLayout {
  static constexpr std::size_t count = sizeof...(P);
  /// Each value's offset, then the end of the last.
  static constexpr std::array<std::size_t, count + 1> offsets = [] {
    constexpr std::size_t sizes[] = {sizeof(P)..., 0}, aligns[] = {alignof(P)..., 1};
    std::array<std::size_t, count + 1> at{};
    for (std::size_t i = 0; i < count; ++i) {
      at[i] = (at[count] + aligns[i] - 1) / aligns[i] * aligns[i];
      at[count] = at[i] + sizes[i];
    }
    return at;
  }();
  static constexpr std::size_t bytes = offsets[count];
  static constexpr std::size_t align = std::max({std::size_t{1}, alignof(P)...});
};

/// Arguments converted to kernel parameter types P..., as launch() and update() take them
/// (first_misfit has checked that each fits), laid out as a recording stores them. Not copied:
/// `arguments()` points into it.
template <class... P>
class ConvertedArguments {
  using Layout = ParameterLayout<P...>;

 public:
  template <class... A>
  explicit ConvertedArguments(A&&... args) {
    place(std::index_sequence_for<P...>{}, std::forward<A>(args)...);
  }
  ConvertedArguments(const ConvertedArguments&) = delete;
  ConvertedArguments& operator=(const ConvertedArguments&) = delete;
  KernelArguments arguments() const noexcept {
    return {params_, sizeof...(P), &typeid(void (*)(P...)), image_, Layout::bytes, Layout::align};
  }

 private:
  template <std::size_t... I, class... A>
  void place(std::index_sequence<I...>, A&&... args) {
    ((params_[I] = place_one<P>(Layout::offsets[I], std::forward<A>(args))), ...);
  }
  // Converts `arg` to P into the image (kernel parameters are trivially copyable), its padding
  // zeroed.
  template <class Q, class A>
  KernelParam place_one(std::size_t offset, A&& arg) {
    const Q value = static_cast<Q>(std::forward<A>(arg));
    std::byte* at = image_ + offset;
    std::memcpy(at, &value, sizeof(Q));
    KernelParam param = kernel_param(value);
    param.value = at;
    if (param.clear_padding) param.clear_padding(at);
    return param;
  }
  alignas(Layout::align) std::byte image_[Layout::bytes + 1] = {};  // zeros between values
  KernelParam params_[sizeof...(P) + 1] = {};
};

/// `count` elements of `v`. The count is checked against the view in elements (validate.cpp),
/// so a count whose byte size overflows is refused, not wrapped.
template <class T>
MemoryRange memory_range(const View<T>& v, std::size_t count) noexcept {
  const bool fits = count <= v.size();
  return {.data = const_cast<void*>(static_cast<const void*>(v.data())),
          .bytes = fits ? count * sizeof(T) : 0,
          .capacity = v.size_bytes(),
          .count = count,
          .element_size = sizeof(T),
          .origin = v.origin(),
          .device = v.device_ordinal(),
          .space = v.space()};
}

}  // namespace cmdgraph::detail
