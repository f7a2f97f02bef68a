// One set of rules on every backend (issue 36, item 4): each program a CUDA device refuses
// whatever the device is refused alike on the host backend, by the same error naming the same
// command, unless CompileOptions::portable is false; on a machine with a GPU the CUDA
// backends are checked against the same table.
#include "support/backends.hpp"
#include "support/expect_error.hpp"

#include <cmdgraph/cmdgraph.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

using namespace cmdgraph;
using cmdgraph::testing::mentions;

namespace {

struct Never {
  bool operator()() const { return false; }
};
struct Zero {
  int operator()() const { return 0; }
};

// A program CUDA refuses, the command the refusal names, and the reason's words; `cuda_only`
// for what the host backend cannot tell (pageable memory: without a GPU a HostBuffer is too).
struct Refused {
  const char* what;
  std::function<void(CommandBuffer&)> record;  // into `cmd` ("outer"), bodies kept alive below
  std::string command;
  std::string because;
  bool cuda_only = false;
};

struct Bodies {
  CommandBuffer body{"body"}, other{"other"}, inner{"inner"};
  std::uint32_t pageable = 0;
  Event event{Device::host()};
};

std::vector<Refused> refusals(Bodies& b) {
  return {
      {"a host task in a loop body",
       [&b](CommandBuffer& cmd) {
         b.body.host([] {}).named("on the host");
         cmd.loop_while(b.body, Never{});
       },
       "body/on the host", "conditional node's body graph"},
      {"an event record in an if body",
       [&b](CommandBuffer& cmd) {
         b.body.record(b.event).named("records");
         cmd.if_then(Never{}, b.body);
       },
       "body/records", "conditional node's body graph"},
      {"a host task in an else body",
       [&b](CommandBuffer& cmd) {
         b.body.fill(host_view(&b.pageable, 1), 1u, 1);
         b.other.host([] {}).named("on the host");
         cmd.if_else(Never{}, b.body, b.other);
       },
       "other/on the host", "conditional node's body graph"},
      {"an event wait in a switch case",
       [&b](CommandBuffer& cmd) {
         b.body.wait(b.event).named("waits");
         cmd.switch_on(Zero{}, {b.body});
       },
       "body/waits", "conditional node's body graph"},
      {"a loop inside an executed buffer",
       [&b](CommandBuffer& cmd) {
         b.body.fill(host_view(&b.pageable, 1), 1u, 1);
         b.inner.loop_while(b.body, Never{}).named("inner loop");
         cmd.execute(b.inner);
       },
       "inner/inner loop", "inside an executed buffer"},
      {"a switch inside an executed buffer",
       [&b](CommandBuffer& cmd) {
         b.body.fill(host_view(&b.pageable, 1), 1u, 1);
         b.inner.switch_on(Zero{}, {b.body}).named("inner switch");
         cmd.execute(b.inner);
       },
       "inner/inner switch", "inside an executed buffer"},
      {"a memory operation on pageable memory",
       [&b](CommandBuffer& cmd) {
         cmd.write_value(host_view(&b.pageable, 1), 1u).named("to pageable");
       },
       "to pageable", "pageable host memory", true},
      {"a wait on pageable memory",
       [&b](CommandBuffer& cmd) {
         cmd.wait_value(host_view(&b.pageable, 1), 1u, ValueCompare::equal).named("on pageable");
       },
       "on pageable", "pageable host memory", true},
  };
}

}  // namespace

TEST_CASE("portable.host_refuses_what_cuda_refuses" * doctest::timeout(60)) {
  Bodies sizes;
  const std::size_t count = refusals(sizes).size();
  for (std::size_t i = 0; i < count; ++i) {
    CMDGRAPH_EACH_BACKEND(on) {
      Bodies b;
      const Refused r = refusals(b)[i];
      CAPTURE(r.what);
      if (r.cuda_only && !on.cuda()) continue;
      CommandBuffer cmd("outer");
      r.record(cmd);
      auto e = CMDGRAPH_EXPECT_ERROR(compile(cmd, on.device, on.options()), errc::unsupported);
      REQUIRE(e);
      CHECK(e->commands() == std::vector<std::string>{r.command});
      CHECK_MESSAGE(mentions(*e, r.because), e->what());
      CHECK(!cmd.sealed());  // refused: the buffer stays open
    }
  }
}

TEST_CASE("portable.host_only_programs_opt_out" * doctest::timeout(60)) {
  Bodies sizes;
  const std::size_t count = refusals(sizes).size();
  for (std::size_t i = 0; i < count; ++i) {
    Bodies b;
    const Refused r = refusals(b)[i];
    CAPTURE(r.what);
    CommandBuffer cmd("outer");
    r.record(cmd);
    Executable exe = compile(cmd, Device::host(), {.portable = false});
    if (r.command == "on pageable") b.pageable = 1;  // the wait's value is there already
    Queue q(Device::host());
    exe.launch(q).wait();
  }
}

TEST_CASE("portable.an_update_to_pageable_memory_is_refused" * doctest::timeout(60)) {
  HostBuffer<std::uint32_t> flag(1);
  std::uint32_t pageable = 0;
  CMDGRAPH_EACH_BACKEND(on) {
    if (!on.cuda()) continue;  // the host backend writes pageable memory as any other
    CommandBuffer cmd("flags");
    auto write = cmd.write_value(flag, 1u).named("flag");
    Executable exe = compile(cmd, on.device, on.options());
    auto e = CMDGRAPH_EXPECT_ERROR(exe.update(write, host_view(&pageable, 1), 2u),
                                   errc::unsupported);
    REQUIRE(e);
    CHECK(e->commands() == std::vector<std::string>{"flag"});
    CHECK(mentions(*e, "pageable host memory"));
    Queue q(on.device);
    exe.launch(q).wait();
    CHECK(flag[0] == 1u);  // the refused update changed nothing
  }
  CommandBuffer cmd("host only");
  auto write = cmd.write_value(flag, 1u);
  Executable exe = compile(cmd, Device::host());
  exe.update(write, host_view(&pageable, 1), 2u);
  Queue q(Device::host());
  exe.launch(q).wait();
  CHECK(pageable == 2u);
}
