// Collectives without a GPU: every record-time refusal names the command and records nothing,
// collectives of one communicator are chained in recording order, their implied access takes
// part in hazard analysis, and the host backend refuses them. The communicators here are
// states with no NCCL communicator behind them (rank and size only): nothing reaches NCCL.
#include "collective/communicator_state.hpp"
#include "plan/plan.hpp"
#include "record/recording.hpp"
#include "support/expect_error.hpp"

#include <cmdgraph/cmdgraph.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <memory>

using namespace cmdgraph;
using cmdgraph::testing::mentions;

namespace {

// Rank `rank` of `size` on cuda:`device`, with no NCCL communicator behind it.
Communicator fake_rank(int rank, int size, int device = 0) {
  return detail::CommunicatorAccess::wrap(std::make_shared<detail::CommunicatorState>(
      nullptr, false, device, rank, size, std::chrono::nanoseconds::max()));
}

// Device memory that is never touched: recording and planning only look at addresses.
template <class T>
View<T> fake_device(std::uintptr_t address, std::size_t n, int device = 0) {
  return View<T>(reinterpret_cast<T*>(address), n, MemorySpace::device, device);
}

bool has_edge(const CommandBuffer& cmd, std::uint32_t parent, std::uint32_t child) {
  const auto& edges = detail::recording_of(cmd)->edges();
  return std::any_of(edges.begin(), edges.end(),
                     [&](const auto& e) { return e.parent == parent && e.child == child; });
}

}  // namespace

static_assert(detail::CollectiveElement<float> && detail::CollectiveElement<const double> &&
              detail::CollectiveElement<std::int32_t> && detail::CollectiveElement<std::uint8_t> &&
              detail::CollectiveElement<std::int64_t> && detail::CollectiveElement<__half>);
static_assert(!detail::CollectiveElement<std::int16_t> && !detail::CollectiveElement<bool> &&
              !detail::CollectiveElement<long double>,
              "types NCCL does not carry make no collective");

TEST_CASE("collectives.record.refusals_name_the_command" * doctest::timeout(10)) {
  const Communicator comm = fake_rank(0, 2);
  const auto a = fake_device<float>(0x100000, 64);
  const auto b = fake_device<float>(0x200000, 64);
  CommandBuffer cmd("step");
  auto refused = [&](auto&& record, const std::string& text, errc code = errc::invalid_argument) {
    const std::size_t before = cmd.size();
    auto e = CMDGRAPH_EXPECT_ERROR(record(), code);
    REQUIRE(e);
    CHECK(e->commands() == std::vector<std::string>{"collective#" + std::to_string(before)});
    CHECK_MESSAGE(mentions(*e, text), e->what());
    CHECK(mentions(*e, "'step'"));
    CHECK(cmd.size() == before);  // nothing recorded
  };
  refused([&] { cmd.all_reduce(comm, a, b, 65); }, "source holds 64 elements");
  refused([&] { cmd.all_reduce(comm, a, b, 0); }, "zero-size collective");
  refused([&] { cmd.all_gather(comm, a, b, 64); }, "destination holds 64 elements (256 bytes), "
                                                   "the command needs 128");
  refused([&] { cmd.reduce_scatter(comm, a, b, 64); }, "source holds 64 elements (256 bytes), "
                                                       "the command needs 128");
  refused([&] { cmd.broadcast(comm, a, b, 8, 2); }, "root 2 is no rank of a communicator of 2");
  refused([&] { cmd.reduce(comm, a, b, 8, ReduceOp::max, -1); }, "root -1 is no rank");
  refused([&] { cmd.all_reduce(comm, View<float>(), b, 8); }, "null source");
  std::vector<float> host(64);
  refused([&] { cmd.all_reduce(comm, host_view(host.data(), 64), b, 8); },
          "its source is host memory; NCCL reads and writes device memory");
  refused([&] { cmd.all_reduce(comm, a, fake_device<float>(0x300000, 64, 1), 8); },
          "its destination is memory of cuda:1, but the communicator's rank runs on cuda:0");
  refused([&] { cmd.all_reduce(comm, a.subview(0, 32), a.subview(16, 32), 32); },
          "overlap without being in place");
  refused([&] { cmd.exchange(comm, {}); }, "an exchange of no transfers");
  refused([&] { cmd.exchange(comm, {send_to(1, a, 8), recv_from(2, b, 8)}); },
          "transfer 1 (recv_from 2): peer 2 is no rank of a communicator of 2");
  refused([&] { cmd.exchange(comm, {send_to(1, a, 80)}); },
          "transfer 0 (send_to 1): source holds 64 elements");
  refused([&] { cmd.all_reduce(Communicator(), a, b, 8); }, "empty or moved-from communicator",
          errc::invalid_handle);
  CHECK(cmd.size() == 0);
}

TEST_CASE("collectives.record.in_place_forms_pass" * doctest::timeout(10)) {
  const auto buffer = fake_device<float>(0x100000, 64);
  for (int rank = 0; rank < 4; ++rank) {
    CAPTURE(rank);
    const Communicator comm = fake_rank(rank, 4);
    CommandBuffer cmd("in place");
    cmd.all_reduce(comm, buffer, buffer, 64);
    cmd.broadcast(comm, buffer, buffer, 64, 3);
    // all_gather: this rank's block of the destination is the source; reduce_scatter: this
    // rank's block of the source is the destination.
    cmd.all_gather(comm, buffer.subview(16 * rank, 16), buffer, 16);
    cmd.reduce_scatter(comm, buffer, buffer.subview(16 * rank, 16), 16);
    CHECK(cmd.size() == 4);
    // Another rank's block overlaps without being in place.
    const int other = (rank + 1) % 4;
    auto e = CMDGRAPH_EXPECT_ERROR(cmd.all_gather(comm, buffer.subview(16 * other, 16), buffer, 16),
                                   errc::invalid_argument);
    REQUIRE(e);
    CHECK(mentions(*e, "overlap without being in place"));
  }
}

TEST_CASE("collectives.record.one_communicator_in_recording_order" * doctest::timeout(10)) {
  const Communicator comm = fake_rank(0, 2), other = fake_rank(0, 2);
  const auto a = fake_device<float>(0x100000, 64), b = fake_device<float>(0x200000, 64);
  const auto c = fake_device<float>(0x300000, 64), d = fake_device<float>(0x400000, 64);
  CommandBuffer cmd("order");
  cmd.all_reduce(comm, a, b, 64).named("first");          // 0
  cmd.all_reduce(other, c, d, 64).named("elsewhere");     // 1: another communicator
  cmd.host([] {}).named("between");                       // 2
  cmd.exchange(comm, {send_to(1, c, 8), recv_from(1, d, 8)}).named("second");  // 3
  cmd.broadcast(other, c, d, 64, 0).named("later");        // 4
  CHECK(has_edge(cmd, 0, 3));
  CHECK(has_edge(cmd, 1, 4));
  CHECK_FALSE(has_edge(cmd, 0, 1));
  CHECK_FALSE(has_edge(cmd, 3, 4));
  CHECK(detail::recording_of(cmd)->edges().size() == 2);
}

TEST_CASE("collectives.plan.implied_access" * doctest::timeout(10)) {
  const Communicator comm = fake_rank(0, 1);
  const auto send = fake_device<float>(0x100000, 64), recv = fake_device<float>(0x200000, 64);
  auto record = [&](CommandBuffer& cmd) {
    cmd.host([] {}).named("produce").writes(send, "send");
    cmd.all_reduce(comm, send, recv, 64).named("sum");
    cmd.host([] {}).named("consume").reads(recv, "recv");
  };
  SUBCASE("validate lists the missing edges") {
    CommandBuffer cmd("forgotten");
    record(cmd);
    auto e = CMDGRAPH_EXPECT_ERROR(compile(cmd, Device::host()), errc::hazard);
    REQUIRE(e);
    CHECK(mentions(*e, "command 'produce' writes send[0, 64) while 'sum' reads send[0, 64)"));
    CHECK(mentions(*e, "command 'sum' writes recv[0, 64) while 'consume' reads recv[0, 64)"));
  }
  SUBCASE("infer writes them") {
    CommandBuffer cmd("inferred");
    record(cmd);
    const auto plan = detail::build_plan(*detail::recording_of(cmd), Hazards::infer);
    CHECK(plan->hazards.inferred.size() == 2);
    CHECK(plan->dag->order == std::vector<std::uint32_t>{0, 1, 2});
  }
  SUBCASE("an exchange reads what it sends and writes what it receives") {
    CommandBuffer cmd("exchange");
    cmd.host([] {}).named("produce").writes(send, "send");
    cmd.exchange(comm, {send_to(0, send, 64), recv_from(0, recv, 64)}).named("swap");
    cmd.host([] {}).named("consume").reads(recv, "recv");
    const auto plan = detail::build_plan(*detail::recording_of(cmd), Hazards::infer);
    CHECK(plan->hazards.inferred.size() == 2);
  }
}

TEST_CASE("collectives.host_backend_refuses_naming_the_command" * doctest::timeout(10)) {
  const Communicator comm = fake_rank(0, 1);
  CommandBuffer cmd("step");
  cmd.all_reduce(comm, fake_device<float>(0x100000, 64), fake_device<float>(0x200000, 64), 64)
      .named("gradients");
  auto e = CMDGRAPH_EXPECT_ERROR(compile(cmd, Device::host()), errc::unsupported);
  REQUIRE(e);
  CHECK(e->commands() == std::vector<std::string>{"gradients"});
  CHECK(mentions(*e, "command 'gradients' cannot run on the host backend: a collective runs "
                     "through NCCL on a CUDA device"));
  CHECK_FALSE(cmd.sealed());
}
