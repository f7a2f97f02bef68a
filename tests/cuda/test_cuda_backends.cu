// Backend choice, stream and event counts on known shapes, capture failures, and compile-time
// errors that name the command.
#include "cuda/kernels.cuh"
#include "support/expect_error.hpp"

#include <doctest/doctest.h>

using namespace cmdgraph;
using namespace cmdgraph::testing;

namespace {

// k independent chains of `length` kernels each.
CommandBuffer chains(int k, int length, int* sink) {
  CommandBuffer cmd("chains");
  for (int c = 0; c < k; ++c) {
    Command prev;
    for (int i = 0; i < length; ++i) {
      auto x = cmd.launch(&set_kernel, LaunchConfig{{1}, {1}}, 1, i, sink + c);
      if (i) x.after(prev);
      prev = x;
    }
  }
  return cmd;
}

}  // namespace

TEST_CASE("cuda.streams.counts_on_known_shapes" * doctest::timeout(60)) {
  const Device gpu = Device::cuda(0);
  Buffer<int> sink(gpu, 16);
  SUBCASE("a chain: one stream, no events") {
    CommandBuffer cmd = chains(1, 50, sink.data());
    Executable exe = compile(cmd, gpu, {.backend = Backend::streams, .max_streams = 4});
    CHECK(exe.stats().streams == 1);
    CHECK(exe.stats().events == 0);
    CHECK(exe.stats().event_waits == 0);
    Queue q(gpu);
    exe.launch(q).wait();
  }
  SUBCASE("k chains, k streams: only fork and join events") {
    for (int k = 2; k <= 6; ++k) {
      CommandBuffer cmd = chains(k, 10, sink.data());
      Executable exe = compile(cmd, gpu, {.backend = Backend::streams, .max_streams = 8});
      CHECK(exe.stats().streams == static_cast<std::size_t>(k));
      CHECK(exe.stats().events == static_cast<std::size_t>(k));        // 1 fork + k-1 joins
      CHECK(exe.stats().event_waits == static_cast<std::size_t>(2 * (k - 1)));
      Queue q(gpu);
      exe.launch(q).wait();
    }
  }
  SUBCASE("more chains than streams") {
    CommandBuffer cmd = chains(8, 5, sink.data());
    Executable exe = compile(cmd, gpu, {.backend = Backend::streams, .max_streams = 3});
    CHECK(exe.stats().streams == 3);
    Queue q(gpu);
    exe.launch(q).wait();
  }
  SUBCASE("waits never exceed cross-stream edges") {
    CommandBuffer cmd("diamonds");
    Command prev;
    for (int i = 0; i < 20; ++i) {
      auto a = cmd.launch(&set_kernel, LaunchConfig{{1}, {1}}, 1, i, sink.data());
      if (i) a.after(prev);
      auto b = cmd.launch(&set_kernel, LaunchConfig{{1}, {1}}, 1, i, sink.data() + 1).after(a);
      auto c = cmd.launch(&set_kernel, LaunchConfig{{1}, {1}}, 1, i, sink.data() + 2).after(a);
      prev = cmd.launch(&set_kernel, LaunchConfig{{1}, {1}}, 1, i, sink.data() + 3).after(b, c);
    }
    Executable exe = compile(cmd, gpu, {.backend = Backend::streams});
    const auto& s = exe.stats();
    CHECK(s.streams == 2);
    CHECK(s.event_waits - /* fork and join */ 2 <= s.cross_stream_edges);
    Queue q(gpu);
    exe.launch(q).wait();
  }
}

TEST_CASE("cuda.backend.automatic_prefers_the_graph" * doctest::timeout(60)) {
  const Device gpu = Device::cuda(0);
  Buffer<int> sink(gpu, 1);
  CommandBuffer cmd("auto");
  cmd.launch(&increment, LaunchConfig{{1}, {1}}, sink.data());
  Executable exe = compile(cmd, gpu);
  CHECK(exe.backend() == Backend::cuda_graph);
  CHECK_FALSE(exe.stats().backend_reason.empty());
  CHECK(exe.stats().instantiate_ms > 0);
}

TEST_CASE("cuda.capture.invalidated" * doctest::timeout(60)) {
  const Device gpu = Device::cuda(0);
  Buffer<int> sink(gpu, 1);
  auto record = [&](CommandBuffer& cmd) {
    cmd.capture([&](NativeStream s) {
      increment<<<1, 1, 0, s>>>(sink.data());
      (void)cudaStreamSynchronize(s);  // forbidden while capturing
    }).named("bad library call");
  };
  SUBCASE("explicit cuda_graph: a clear error, the library still usable") {
    CommandBuffer cmd("capture");
    record(cmd);
    auto e = CMDGRAPH_EXPECT_ERROR(compile(cmd, gpu, {.backend = Backend::cuda_graph}),
                                   errc::unsupported);
    REQUIRE(e);
    CHECK(e->commands() == std::vector<std::string>{"bad library call"});
    CHECK(e->cuda_status() != 0);
    CHECK(cudaGetLastError() == cudaSuccess);  // nothing sticky left behind
    CommandBuffer next("next");
    next.launch(&increment, LaunchConfig{{1}, {1}}, sink.data());
    Queue q(gpu);
    compile(next, gpu).launch(q).wait();
  }
  SUBCASE("automatic: falls back to streams and says why") {
    CommandBuffer cmd("capture");
    cmd.capture([&](NativeStream s) { increment<<<1, 1, 0, s>>>(sink.data()); });
    record(cmd);
    Executable exe = compile(cmd, gpu);
    CHECK(exe.backend() == Backend::streams);
    CHECK(exe.stats().backend_reason.find("bad library call") != std::string::npos);
  }
}

TEST_CASE("cuda.compile.errors_name_the_command" * doctest::timeout(60)) {
  const Device gpu = Device::cuda(0);
  Buffer<int> sink(gpu, 1);
  SUBCASE("a launch CUDA cannot take") {
    CommandBuffer cmd("too big");
    cmd.launch(&increment, LaunchConfig{{1}, {4096}}, sink.data()).named("huge block");
    CMDGRAPH_EACH_CUDA_BACKEND(backend) {
      try {
        Executable exe = compile(cmd, gpu, {.backend = backend});
        Queue q(gpu);
        exe.launch(q).wait();
        FAIL("a 4096-thread block should be refused");
      } catch (const Error& e) {
        CHECK(e.code() == errc::cuda_error);
        CHECK(mentions(e, "huge block"));
      }
      (void)cudaGetLastError();
    }
  }
  SUBCASE("memory of another device") {
    CommandBuffer cmd("elsewhere");
    cmd.fill(View<int>(sink.data(), 1, MemorySpace::device, 7), 0, 1).named("remote");
    auto e = CMDGRAPH_EXPECT_ERROR(compile(cmd, gpu), errc::device_mismatch);
    REQUIRE(e);
    CHECK(e->commands() == std::vector<std::string>{"remote"});
  }
}
