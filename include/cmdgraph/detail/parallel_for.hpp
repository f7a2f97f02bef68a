// The two faces of a parallel_for functor or of a conditional command's condition or selector: a
// host call, and (in CUDA translation units) the kernel from cmdgraph/kernels.cuh; and a
// condition or selector as a conditional command records it (condition_spec, selector_spec).
#pragma once

#include <cmdgraph/detail/specs.hpp>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#if defined(__CUDACC__)
#include <cmdgraph/kernels.cuh>
#endif

namespace cmdgraph::detail {

template <class F>
void host_invoke(const void* functor, std::size_t begin, std::size_t end) {
  const F& f = *static_cast<const F*>(functor);
  for (std::size_t i = begin; i < end; ++i) f(i);
}

/// False for a __device__-only extended lambda, whose body the host cannot call.
template <class F>
constexpr bool callable_on_host() noexcept {
#if defined(__CUDACC__) && defined(__CUDACC_EXTENDED_LAMBDA__)
  return !__nv_is_extended_device_lambda_closure_type(F);
#else
  return true;
#endif
}

/// The host loop for F, or null when F is a __device__-only lambda.
template <class F>
constexpr HostInvoke host_invoke_of() noexcept {
  if constexpr (callable_on_host<F>()) {
    return &host_invoke<F>;
  } else {
    return nullptr;
  }
}

/// The kernel for F when this translation unit is compiled by nvcc, null otherwise.
template <class F>
const void* device_kernel_of() noexcept {
#if defined(__CUDACC__)
  return reinterpret_cast<const void*>(&parallel_for_kernel<F>);
#else
  return nullptr;
#endif
}

template <class C>
std::uint32_t host_condition(const void* condition) {
  return (*static_cast<const C*>(condition))() ? 1u : 0u;
}

template <class S>
std::uint32_t host_selector(const void* selector) {
  return selector_value((*static_cast<const S*>(selector))());
}

/// The host evaluation of condition C (loop_while, if_then, if_else), or null when C is a
/// __device__-only lambda.
template <class C>
constexpr HostCondition host_condition_of() noexcept {
  if constexpr (callable_on_host<C>()) {
    return &host_condition<C>;
  } else {
    return nullptr;
  }
}

/// The host evaluation of switch_on's selector S, or null when S is a __device__-only lambda.
template <class S>
constexpr HostCondition host_selector_of() noexcept {
  if constexpr (callable_on_host<S>()) {
    return &host_selector<S>;
  } else {
    return nullptr;
  }
}

/// The kernel that evaluates condition C on the GPU when this translation unit is compiled by
/// nvcc, null otherwise.
template <class C>
const void* condition_kernel_of() noexcept {
#if defined(__CUDACC__)
  return reinterpret_cast<const void*>(&condition_kernel<C>);
#else
  return nullptr;
#endif
}

/// The kernel that evaluates selector S on the GPU when this translation unit is compiled by
/// nvcc, null otherwise.
template <class S>
const void* selector_kernel_of() noexcept {
#if defined(__CUDACC__)
  return reinterpret_cast<const void*>(&selector_kernel<S>);
#else
  return nullptr;
#endif
}

/// A conditional command's condition C or selector S as recorded: its bytes, its host call and
/// its kernel.
template <class F>
ConditionSpec functor_spec(const F& f, HostCondition host, const void* device_kernel) {
  static_assert(std::is_trivially_copyable_v<F>,
                "conditions and selectors are copied byte-wise to the device: capture "
                "pointers and values, not containers");
  return {kernel_param(f), host, device_kernel};
}
template <class C>
ConditionSpec condition_spec(const C& condition) {
  return functor_spec(condition, host_condition_of<C>(), condition_kernel_of<C>());
}
template <class S>
ConditionSpec selector_spec(const S& selector) {
  return functor_spec(selector, host_selector_of<S>(), selector_kernel_of<S>());
}

}  // namespace cmdgraph::detail
