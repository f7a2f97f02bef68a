// Library bugs the fuzzer found, each checked at record or update time (never run, so an
// overrun cannot happen here even if one came back). All fixed: they guard against regressions.
#include "support/expect_error.hpp"

#include <cmdgraph/cmdgraph.hpp>

#include <doctest/doctest.h>

#include <vector>

using namespace cmdgraph;

// validate.cpp used to skip the capacity check for empty views (capacity 0), so any count into
// or out of an empty, non-null view was accepted and overran the memory when it ran.
TEST_CASE("fuzz.finding.fill_into_empty_view" * doctest::timeout(10)) {
  std::vector<int> memory(4);
  CommandBuffer cmd("overrun");
  CMDGRAPH_EXPECT_ERROR(cmd.fill(host_view(memory.data() + 4, 0), 7, 4), errc::invalid_argument);
}

TEST_CASE("fuzz.finding.copy_from_empty_view" * doctest::timeout(10)) {
  std::vector<int> memory(4), out(4);
  CommandBuffer cmd("overread");
  CMDGRAPH_EXPECT_ERROR(cmd.copy(host_view(out.data(), 4), host_view(memory.data() + 4, 0), 4),
                        errc::invalid_argument);
}

TEST_CASE("fuzz.finding.update_fill_into_empty_view" * doctest::timeout(10)) {
  std::vector<int> memory(4);
  CommandBuffer cmd("overrun on update");
  auto fill = cmd.fill(host_view(memory.data(), 4), 7, 4);
  Executable exe = compile(cmd, Device::host());
  CMDGRAPH_EXPECT_ERROR(exe.update(fill, host_view(memory.data() + 4, 0), 7, 4),
                        errc::invalid_argument);
}

// View::subview added its offset to a null pointer (UBSan: applying non-zero offset to null
// pointer, memory.hpp) for a null view with a size, as host_view(nullptr, n) makes one.
TEST_CASE("fuzz.finding.subview_of_null_view" * doctest::timeout(10)) {
  const View<int> null = host_view<int>(nullptr, 2);
  const View<int> part = null.subview(1, 1);
  CHECK(part.data() == nullptr);
  CHECK(part.size() == 1);
  CommandBuffer cmd("null");
  CMDGRAPH_EXPECT_ERROR(cmd.fill(part, 7, 1), errc::invalid_argument);
}
