// Checks that a statement throws cmdgraph::Error with a given code, and returns the error.
#pragma once

#include <cmdgraph/error.hpp>

#include <doctest/doctest.h>

#include <optional>
#include <string>

/// Runs `stmt`, requiring an Error with code `code`; evaluates to std::optional<Error>.
#define CMDGRAPH_EXPECT_ERROR(stmt, expected_code)                                   \
  [&]() -> std::optional<cmdgraph::Error> {                                          \
    try {                                                                            \
      stmt;                                                                          \
    } catch (const cmdgraph::Error& e_) {                                            \
      CHECK_MESSAGE(e_.code() == (expected_code), "got '" << e_.what() << "'");      \
      return e_;                                                                     \
    }                                                                                \
    FAIL_CHECK("expected cmdgraph::Error("                                           \
               << std::string(cmdgraph::to_string(expected_code)) << ") from: " #stmt); \
    return std::nullopt;                                                             \
  }()

namespace cmdgraph::testing {
inline bool mentions(const Error& e, const std::string& text) {
  return std::string(e.what()).find(text) != std::string::npos;
}
}  // namespace cmdgraph::testing
