// Transient memory on the host backend (issue 15, item 2): a pipeline through transients with
// poisoned outputs, the arena shared by lifetimes kept apart, updates that point kernels into
// transients (and refusals outside their lifetimes), clones with their own memory, re-recorded
// updates, and memory never freed living to the end of the launch.
#include "support/expect_error.hpp"

#include <cmdgraph/cmdgraph.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>
#include <vector>

using namespace cmdgraph;
using cmdgraph::testing::mentions;

namespace {

struct Affine {
  const float* in;
  float* out;
  float a, b;
  void operator()(std::size_t i) const { out[i] = a * in[i] + b; }
};

// 40 KiB a transient: a multiple of the arena's 256-byte alignment.
constexpr std::size_t n = 10240;

// in -> t1 = 2 in -> t2 = t1 + 1 -> out, t1 freed before t3 (= 3 t2) is allocated, so t3 may
// take t1's bytes: out = 3 (2 in + 1).
struct Pipeline {
  std::vector<float> in = std::vector<float>(n), out = std::vector<float>(n, -1.0f);
  CommandBuffer cmd{"transients"};
  Command free1, stage3;
  ParallelForCommand<Affine> stage1;
  CopyCommand<float> save;
  Transient<float> t1, t2, t3;

  Pipeline() {
    std::iota(in.begin(), in.end(), 0.0f);
    t1 = cmd.alloc<float>(n).named("t1");
    stage1 = cmd.parallel_for(n, Affine{in.data(), t1.data(), 2, 0}).after(t1).named("stage1");
    t2 = cmd.alloc<float>(n).named("t2");
    auto stage2 = cmd.parallel_for(n, Affine{t1.data(), t2.data(), 1, 1}).after(stage1, t2)
                      .named("stage2");
    free1 = cmd.free(t1).after(stage2).named("free t1");
    t3 = cmd.alloc<float>(n).after(free1).named("t3");
    stage3 = cmd.parallel_for(n, Affine{t2.data(), t3.data(), 3, 0}).after(t3, stage2)
                 .named("stage3");
    save = cmd.copy(host_view(out.data(), n), t3, n).after(stage3).named("save");
    cmd.free(t2).after(stage3).named("free t2");
    cmd.free(t3).after(save).named("free t3");
  }
  bool right(float scale = 1) const {
    for (std::size_t i = 0; i < n; ++i) {
      if (out[i] != scale * 3 * (2 * in[i] + 1)) return false;
    }
    return true;
  }
};

}  // namespace

TEST_CASE("host.transients.pipeline" * doctest::timeout(30)) {
  Pipeline p;
  Executable exe = compile(p.cmd, Device::host());
  CHECK(exe.stats().transients == 3);
  // t1 and t3 share bytes: two transients' room for three.
  CHECK(exe.stats().transient_bytes == 2 * n * sizeof(float));
  Queue q(Device::host());
  for (int i = 0; i < 5; ++i) {
    std::fill(p.out.begin(), p.out.end(), -1.0f);  // poison
    exe.launch(q).wait();
    CHECK(p.right());
  }
}

TEST_CASE("host.transients.never_freed_lives_to_the_end_of_the_launch" * doctest::timeout(30)) {
  std::vector<float> out(n, -1.0f);
  CommandBuffer cmd("kept");
  auto t = cmd.alloc<float>(n);
  auto f = cmd.fill(t, 4.0f, n).after(t);
  cmd.copy(host_view(out.data(), n), t, n).after(f);
  Queue q(Device::host());
  compile(cmd, Device::host()).launch(q).wait();
  CHECK(std::all_of(out.begin(), out.end(), [](float v) { return v == 4.0f; }));
}

TEST_CASE("host.transients.updates_point_into_transients" * doctest::timeout(30)) {
  Pipeline p;
  Executable exe = compile(p.cmd, Device::host());
  Queue q(Device::host());
  // Scale by 10 instead: new functor values, recorded with the placeholders.
  exe.update(p.stage1, Affine{p.in.data(), p.t1.data(), 20, 0});
  exe.update(p.save, host_view(p.out.data(), n), p.t3, n);
  exe.launch(q).wait();
  for (std::size_t i = 0; i < n; ++i) {
    if (p.out[i] != 3 * (20 * p.in[i] + 1)) {
      FAIL_CHECK("element " << i << " is " << p.out[i]);
      break;
    }
  }
  // Half the copy, from the middle of t3 on.
  std::fill(p.out.begin(), p.out.end(), -1.0f);
  exe.update(p.save, host_view(p.out.data(), n / 2), p.t3.subview(n / 2, n / 2), n / 2);
  exe.launch(q).wait();
  CHECK(p.out[0] == 3 * (20 * p.in[n / 2] + 1));
}

TEST_CASE("host.transients.update_refused_outside_the_lifetime" * doctest::timeout(30)) {
  Pipeline p;
  Executable exe = compile(p.cmd, Device::host());
  // stage1 runs before t3 is allocated.
  auto e = CMDGRAPH_EXPECT_ERROR(exe.update(p.stage1, Affine{p.in.data(), p.t3.data(), 2, 0}),
                                 errc::hazard);
  REQUIRE(e);
  CHECK(mentions(*e, "update of command 'stage1' would make it use transient memory 't3' with "
                     "no path from its allocation to it"));
  // save runs after t1 is freed.
  e = CMDGRAPH_EXPECT_ERROR(exe.update(p.save, host_view(p.out.data(), n), p.t1, n),
                            errc::hazard);
  // Another buffer's transient.
  CommandBuffer other("other");
  auto stranger = other.alloc<float>(n);
  e = CMDGRAPH_EXPECT_ERROR(exe.update(p.stage1, Affine{p.in.data(), stranger.data(), 2, 0}),
                            errc::foreign_handle);
  // The refusals changed nothing.
  Queue q(Device::host());
  exe.launch(q).wait();
  CHECK(p.right());
}

TEST_CASE("host.transients.clones_have_their_own_memory" * doctest::timeout(30)) {
  Pipeline p;
  Executable exe = compile(p.cmd, Device::host());
  exe.update(p.stage1, Affine{p.in.data(), p.t1.data(), 4, 0});  // carried into the clone
  Executable copy = exe.clone();
  std::vector<float> other(n, -1.0f);
  copy.update(p.save, host_view(other.data(), n), p.t3, n);
  Queue q1(Device::host()), q2(Device::host());
  for (int i = 0; i < 20; ++i) {
    exe.launch(q1);
    copy.launch(q2);
  }
  q1.wait();
  q2.wait();
  for (std::size_t i = 0; i < n; ++i) {
    const float want = 3 * (4 * p.in[i] + 1);
    if (p.out[i] != want || other[i] != want) {
      FAIL_CHECK("element " << i << ": " << p.out[i] << " and " << other[i]);
      break;
    }
  }
}

TEST_CASE("host.transients.rerecorded_update" * doctest::timeout(30)) {
  Pipeline p;
  Executable exe = compile(p.cmd, Device::host());
  Pipeline again;  // new placeholders, same structure
  again.in = p.in;
  UpdateResult r = exe.update(again.cmd);
  CHECK_FALSE(r.reinstantiated);
  Queue q(Device::host());
  exe.launch(q).wait();
  CHECK(again.right());
  CHECK(std::all_of(p.out.begin(), p.out.end(), [](float v) { return v == -1.0f; }));
}
