// Sizes at the overflow edge (issue 20 #5): counts whose byte size overflows size_t, buffers too
// large to describe or for the machine to back, views beyond their memory. Each is refused with
// Error(invalid_argument) (out_of_memory for what the machine cannot back), naming the command
// where there is one, and nothing is recorded.
#include "support/expect_error.hpp"

#include <cmdgraph/cmdgraph.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <vector>

using namespace cmdgraph;
using cmdgraph::testing::mentions;

namespace {
constexpr std::size_t size_max = std::numeric_limits<std::size_t>::max();
}  // namespace

TEST_CASE("reliability.copy_count_overflow_refused") {
  Buffer<float> src(Device::host(), 16), dst(Device::host(), 16);
  CommandBuffer cmd("sizes");
  cmd.host([] {});
  // (SIZE_MAX/4 + 2) * 4 wraps to 4 bytes: one element.
  const auto e =
      CMDGRAPH_EXPECT_ERROR(cmd.copy(dst, src, size_max / 4 + 2), errc::invalid_argument);
  REQUIRE(e);
  CHECK(mentions(*e, "copy#1"));
  CHECK(e->commands() == std::vector<std::string>{"copy#1"});
  CHECK(cmd.size() == 1);
  const auto f =
      CMDGRAPH_EXPECT_ERROR(cmd.fill(dst, 1.0f, size_max / 4 + 2), errc::invalid_argument);
  REQUIRE(f);
  CHECK(mentions(*f, "fill#1"));
  CHECK(cmd.size() == 1);
}

TEST_CASE("reliability.copy_count_beyond_view_names_elements") {
  Buffer<float> src(Device::host(), 16), dst(Device::host(), 8);
  CommandBuffer cmd("sizes");
  const auto e = CMDGRAPH_EXPECT_ERROR(cmd.copy(dst, src, 12), errc::invalid_argument);
  REQUIRE(e);
  CHECK(mentions(*e, "copy#0"));
  CHECK(mentions(*e, "8 elements"));
  CHECK(mentions(*e, "12"));
}

TEST_CASE("reliability.buffer_size_overflow_refused") {
  CMDGRAPH_EXPECT_ERROR(Buffer<float>(Device::host(), (std::size_t{1} << 62) + 1),
                        errc::invalid_argument);
  CMDGRAPH_EXPECT_ERROR(Buffer<double>(Device::host(), size_max / 8 + 1), errc::invalid_argument);
  CMDGRAPH_EXPECT_ERROR(HostBuffer<double>(size_max / 8 + 1), errc::invalid_argument);
}

// A size that fits size_t but no machine: refused before the allocator sees it. Where the
// kernel overcommits, 32 TiB of host memory used to be "allocated", and the process was killed
// when the memory was touched (the fuzz replay under MALLOC_PERTURB_ on the H200 machine).
TEST_CASE("reliability.buffer_beyond_the_machine_refused") {
  const std::size_t huge = std::size_t{1} << 45;
  const auto e = CMDGRAPH_EXPECT_ERROR(Buffer<std::uint8_t>(Device::host(), huge),
                                       errc::out_of_memory);
  REQUIRE(e);
  CHECK(mentions(*e, "physical memory"));
  CHECK(mentions(*e, std::to_string(huge)));
  const auto h = CMDGRAPH_EXPECT_ERROR(HostBuffer<std::uint8_t>{huge}, errc::out_of_memory);
  REQUIRE(h);
  CHECK(mentions(*h, "physical memory"));
  CHECK(Buffer<std::uint8_t>(Device::host(), 4096).data() != nullptr);
}

TEST_CASE("reliability.view_size_overflow_refused") {
  float x = 0;
  CMDGRAPH_EXPECT_ERROR(host_view(&x, size_max / 2), errc::invalid_argument);
  CHECK(host_view(&x, 1).size_bytes() == sizeof(float));
}

TEST_CASE("reliability.subview_bounds_checked") {
  Buffer<float> buf(Device::host(), 16);
  const auto e = CMDGRAPH_EXPECT_ERROR(buf.subview(10, 100), errc::invalid_argument);
  REQUIRE(e);
  CHECK(mentions(*e, "16"));
  CMDGRAPH_EXPECT_ERROR(buf.subview(17, 0), errc::invalid_argument);
  CMDGRAPH_EXPECT_ERROR(buf.subview(2, size_max), errc::invalid_argument);  // offset + count wraps
  CMDGRAPH_EXPECT_ERROR(buf.view().subview(size_max, 2), errc::invalid_argument);
  const View<float> tail = buf.subview(10, 6);
  CHECK(tail.size() == 6);
  CHECK(tail.data() == buf.data() + 10);
  CHECK(buf.subview(16, 0).size() == 0);
  CHECK(tail.subview(2, 4).data() == buf.data() + 12);
  CMDGRAPH_EXPECT_ERROR(tail.subview(2, 5), errc::invalid_argument);
}
