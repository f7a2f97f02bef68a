// How recorded values convert to kernel parameter and fill element types: which conversions
// compile (no floating-point value silently truncated to an integer), and the record-time check
// that an arithmetic value fits the type it converts to.
#pragma once

#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

namespace cmdgraph::detail {

/// An argument of type A may be passed for a parameter of type P: A converts to P, and not
/// from floating point to an integer (3.9 -> 3 would drop the fraction without a word).
template <class A, class P>
concept converts_to =
    std::is_convertible_v<A, P> &&
    !(std::is_floating_point_v<std::remove_cvref_t<A>> && std::is_integral_v<P>);

/// Whether kernel argument `I` (counted from 0) of type A may be passed for parameter type
/// P; a compile error otherwise, one static_assert whose instantiation names the argument's
/// place and both types.
template <std::size_t I, class P, class A>
constexpr bool argument_converts() {
  static_assert(converts_to<A, P>,
                "cmdgraph: a kernel argument does not convert to its parameter's type (the "
                "instantiation of argument_converts above gives I, the argument's place from "
                "0, P, the parameter's type, and A, the argument's)");
  return converts_to<A, P>;
}

/// Whether arguments A... may be passed for a kernel's parameters P... (as many of each):
/// argument_converts of each.
template <class... P>
struct KernelParameters {
  template <class... A, std::size_t... I>
  static constexpr bool take(std::index_sequence<I...>) {
    return (argument_converts<I, P, A>() && ...);
  }
};

/// True when `value` converted to To keeps its value's magnitude: integers within To's range,
/// finite floating-point values within To's finite range (infinities and NaN stay what they
/// are). Other conversions (to or from classes, enums, pointers; anything to bool) are the
/// types' own business and always pass.
template <class To, class From>
bool fits(const From& value) noexcept {
  using F = std::remove_cvref_t<From>;
  if constexpr (!std::is_arithmetic_v<F> || !std::is_arithmetic_v<To> ||
                std::is_same_v<To, bool> || std::is_same_v<F, bool>) {
    return true;
  } else if constexpr (std::is_integral_v<F> && std::is_integral_v<To>) {
    if constexpr (std::is_signed_v<F>) {
      if (value < 0) {
        return std::is_signed_v<To> &&
               static_cast<std::intmax_t>(value) >=
                   static_cast<std::intmax_t>(std::numeric_limits<To>::min());
      }
    }
    return static_cast<std::uintmax_t>(value) <=
           static_cast<std::uintmax_t>(std::numeric_limits<To>::max());
  } else if constexpr (std::is_floating_point_v<F>) {
    if (!std::isfinite(value)) return std::is_floating_point_v<To>;
    const long double v = value;
    if constexpr (std::is_integral_v<To>) {  // only fill values reach here, whole ones only
      return v == std::trunc(v) &&
             v >= static_cast<long double>(std::numeric_limits<To>::min()) &&
             v <= static_cast<long double>(std::numeric_limits<To>::max());
    } else {
      return std::fabs(v) <= static_cast<long double>(std::numeric_limits<To>::max());
    }
  } else {
    return true;  // an integer to floating point: always within range
  }
}

/// How messages name an arithmetic type: "float", "signed 32-bit integer", ...
template <class T>
std::string type_name() {
  if constexpr (std::is_same_v<T, bool>) {
    return "bool";
  } else if constexpr (std::is_floating_point_v<T>) {
    return sizeof(T) == sizeof(float)    ? "float"
           : sizeof(T) == sizeof(double) ? "double"
                                         : "long double";
  } else if constexpr (std::is_integral_v<T>) {
    return std::string(std::is_signed_v<T> ? "signed " : "unsigned ") +
           std::to_string(8 * sizeof(T)) + "-bit integer";
  } else {
    return "its type";
  }
}

/// An arithmetic value as messages show it (shortest round-trip form for floating point).
template <class T>
std::string value_text(const T& value) {
  using V = std::remove_cvref_t<T>;
  if constexpr (std::is_same_v<V, bool>) {
    return value ? "true" : "false";
  } else if constexpr (std::is_floating_point_v<V>) {
    char buf[64];
    const auto end = std::to_chars(buf, buf + sizeof buf, value).ptr;
    return std::string(buf, end);
  } else if constexpr (std::is_integral_v<V>) {
    if constexpr (std::is_signed_v<V>) return std::to_string(static_cast<long long>(value));
    else return std::to_string(static_cast<unsigned long long>(value));
  } else {
    return "a value";
  }
}

/// What does not fit: "argument 2 (-1)" and "the parameter's type, unsigned 32-bit integer".
struct Misfit {
  std::string what;
  std::string type;
  /// "argument 2 (-1) does not fit the parameter's type, unsigned 32-bit integer"
  std::string message() const { return what + " does not fit " + type; }
};

/// The first of `args` that does not fit its parameter type P, numbered from 1.
template <class... P, class... A>
std::optional<Misfit> first_misfit(const A&... args) {
  if constexpr (sizeof...(P) == 0) {
    return std::nullopt;
  } else {
    std::optional<Misfit> found;
    std::size_t index = 0;
    auto check = [&]<class To, class From>(const From& arg) {
      ++index;
      if (!found && !fits<To>(arg)) {
        found = Misfit{"argument " + std::to_string(index) + " (" + value_text(arg) + ")",
                       "the parameter's type, " + type_name<To>()};
      }
    };
    (check.template operator()<P>(args), ...);
    return found;
  }
}

/// A fill value that does not fit the element type T.
template <class T, class V>
std::optional<Misfit> fill_misfit(const V& value) {
  if (fits<T>(value)) return std::nullopt;
  return Misfit{"value " + value_text(value), "the element type, " + type_name<T>()};
}

}  // namespace cmdgraph::detail
