// Transient memory on both CUDA backends (issue 15, item 2): results through transients with
// poisoned outputs, CUDA graph memory nodes that really allocate from the graph pool (and the
// streams backend's arena that does not), memory reused across 100 launches, updates, clones,
// re-recorded updates, profiling, and the refusals.
#include "cuda/kernels.cuh"
#include "support/expect_error.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>
#include <string>

using namespace cmdgraph;
using namespace cmdgraph::testing;

namespace {

struct Affine {
  const float* in;
  float* out;
  float a, b;
  __host__ __device__ void operator()(std::size_t i) const { out[i] = a * in[i] + b; }
};

std::uint64_t graph_memory(Device gpu, cudaGraphMemAttributeType attribute) {
  std::uint64_t value = 0;
  TEST_CUDA(cudaDeviceGetGraphMemAttribute(gpu.ordinal(), attribute, &value));
  return value;
}

// Graph memory not held by a live graph goes back, and the high watermark starts again.
void reset_graph_memory(Device gpu) {
  const OnDevice on(gpu);
  TEST_CUDA(cudaDeviceSynchronize());
  TEST_CUDA(cudaDeviceGraphMemTrim(gpu.ordinal()));
  std::uint64_t zero = 0;
  TEST_CUDA(cudaDeviceSetGraphMemAttribute(gpu.ordinal(), cudaGraphMemAttrUsedMemHigh, &zero));
  TEST_CUDA(cudaDeviceSetGraphMemAttribute(gpu.ordinal(), cudaGraphMemAttrReservedMemHigh, &zero));
}

struct Never {
  __host__ __device__ bool operator()() const { return false; }
};

// in is uploaded to t1; t0 = 2 t1 (parallel_for); t2 = 1 (fill); t2 = t0 + t2 (kernel);
// t3 = 3 t2 (parallel_for), allocated once t0 and t1 are freed; out = t3 = 3 (2 in + 1).
struct Pipeline {
  std::size_t n;
  HostBuffer<float> in, out;
  CommandBuffer cmd{"transients"};
  ParallelForCommand<Affine> stage1;
  CopyCommand<float> save;
  Transient<float> t0, t1, t2, t3;

  explicit Pipeline(std::size_t n_) : n(n_), in(n_), out(n_) {
    std::iota(in.begin(), in.end(), 0.0f);
    std::fill(out.begin(), out.end(), -1.0f);  // poison
    t1 = cmd.alloc<float>(n).named("t1");
    auto upload = cmd.copy(t1, in, n).after(t1).named("upload");
    t0 = cmd.alloc<float>(n).named("t0");
    stage1 = cmd.parallel_for(n, Affine{t1.data(), t0.data(), 2, 0}).after(upload, t0)
                 .named("stage1");
    t2 = cmd.alloc<float>(n).named("t2");
    auto ones = cmd.fill(t2, 1.0f, n).after(t2).named("ones");
    const LaunchConfig config{{static_cast<unsigned>((n + 255) / 256)}, {256}};
    auto stage2 = cmd.launch(&axpy_kernel, config, static_cast<int>(n), 1.0f, t0.data(), t2.data())
                      .after(stage1, ones).named("stage2");
    auto free0 = cmd.free(t0).after(stage2).named("free t0");
    auto free1 = cmd.free(t1).after(stage1).named("free t1");
    t3 = cmd.alloc<float>(n).after(free0, free1).named("t3");
    auto stage3 = cmd.parallel_for(n, Affine{t2.data(), t3.data(), 3, 0}).after(t3, stage2)
                      .named("stage3");
    save = cmd.copy(out, t3, n).after(stage3).named("save");
    cmd.free(t2).after(stage3).named("free t2");
    cmd.free(t3).after(save).named("free t3");
  }
  bool right(float scale = 2) const {
    for (std::size_t i = 0; i < n; ++i) {
      if (out[i] != 3 * (scale * in[i] + 1)) return false;
    }
    return true;
  }
};

}  // namespace

TEST_CASE("cuda.transients.pipeline" * doctest::timeout(120)) {
  const Device gpu = Device::cuda(0);
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    Pipeline p(1 << 20);
    Executable exe = compile(p.cmd, gpu, {.backend = backend});
    CHECK(exe.backend() == backend);
    CHECK(exe.stats().transients == 4);
    // t0 and t1 die before t3 is born: three transients' room for four.
    CHECK(exe.stats().transient_bytes == 3 * p.n * sizeof(float));
    Queue q(gpu);
    for (int i = 0; i < 3; ++i) {
      std::fill(p.out.begin(), p.out.end(), -1.0f);
      exe.launch(q).wait();
      CHECK(p.right());
    }
  }
}

TEST_CASE("cuda.transients.profiled" * doctest::timeout(60)) {
  const Device gpu = Device::cuda(0);
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    Pipeline p(4096);
    Executable exe = compile(p.cmd, gpu, {.backend = backend, .profile = true});
    Queue q(gpu);
    exe.launch(q).wait();
    CHECK(p.right());
    const Profile profile = exe.last_profile();
    std::size_t allocs = 0;
    for (const auto& c : profile.commands) allocs += c.kind == CommandKind::alloc;
    CHECK(allocs == 4);
  }
}

TEST_CASE("cuda.transients.graph_allocates_from_the_graph_pool" * doctest::timeout(120)) {
  const Device gpu = Device::cuda(0);
  const std::size_t n = 16 << 20;  // 64 MiB a transient
  Queue q(gpu);
  // One launch of the pipeline on `backend`, the graph pool's watermarks reset first.
  auto run_once = [&](Pipeline& p, Backend backend) {
    reset_graph_memory(gpu);
    Executable exe = compile(p.cmd, gpu, {.backend = backend});
    exe.launch(q).wait();
    CHECK(p.right());
    return exe;
  };
  {
    Pipeline p(n);
    run_once(p, Backend::streams);
    // The streams backend's arena comes from the device's ordinary pool.
    CHECK(graph_memory(gpu, cudaGraphMemAttrUsedMemHigh) == 0);
  }
  Pipeline p(n);
  Executable exe = run_once(p, Backend::cuda_graph);
  const std::uint64_t used = graph_memory(gpu, cudaGraphMemAttrUsedMemHigh);
  const std::uint64_t reserved = graph_memory(gpu, cudaGraphMemAttrReservedMemCurrent);
  MESSAGE("graph pool after one launch: used high " << used << ", reserved " << reserved
                                                     << ", four transients of " << 4 * n
                                                     << " bytes");
  CHECK(used >= 3 * n * sizeof(float));  // at least the three alive at once
  CHECK(used < 4 * n * sizeof(float));   // and CUDA reuses t0's or t1's for t3
  // 100 more launches: the graph's memory is reused, not grown.
  for (int i = 0; i < 100; ++i) exe.launch(q);
  q.wait();
  CHECK(p.right());
  CHECK(graph_memory(gpu, cudaGraphMemAttrReservedMemCurrent) == reserved);
  CHECK(graph_memory(gpu, cudaGraphMemAttrUsedMemHigh) == used);
}

TEST_CASE("cuda.transients.cuda_dot_shows_memory_nodes" * doctest::timeout(60)) {
  const Device gpu = Device::cuda(0);
  Pipeline p(1024);
  Executable exe = compile(p.cmd, gpu, {.backend = Backend::cuda_graph});
  const std::string path =
      (std::filesystem::temp_directory_path() / "cmdgraph_transients_cuda.dot").string();
  exe.write_cuda_dot(path);
  std::ifstream f(path);
  std::stringstream text;
  text << f.rdbuf();
  std::filesystem::remove(path);
  // Labelled by node type (MEM_ALLOC, MEM_FREE in CUDA 12 and 13); counted in lower case so
  // that a change of spelling (MemAlloc) still counts.
  std::string lower = text.str();
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  auto count = [&](const std::string& a, const std::string& b) {
    std::size_t found = 0;
    for (const std::string& word : {a, b}) {
      for (std::size_t at = lower.find(word); at != std::string::npos;
           at = lower.find(word, at + 1)) {
        ++found;
      }
    }
    return found;
  };
  const std::size_t allocs = count("mem_alloc", "memalloc"), frees = count("mem_free", "memfree");
  MESSAGE("CUDA's DOT names " << allocs << " allocation and " << frees << " free nodes");
  CHECK(allocs >= 4);
  CHECK(frees >= 4);
}

TEST_CASE("cuda.transients.never_freed_lives_to_the_end_of_each_launch" * doctest::timeout(60)) {
  const Device gpu = Device::cuda(0);
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    const std::size_t n = 1 << 16;
    HostBuffer<int> out(n);
    CommandBuffer cmd("kept");
    auto t = cmd.alloc<int>(n).named("kept");
    auto set = cmd.launch(&set_kernel, LaunchConfig{{static_cast<unsigned>(n / 256)}, {256}},
                          static_cast<int>(n), 7, t.data()).after(t);
    cmd.copy(out, t, n).after(set);
    Executable exe = compile(cmd, gpu, {.backend = backend});
    Queue q(gpu);
    for (int i = 0; i < 5; ++i) {  // a graph relaunched with a live allocation would fail
      std::fill(out.begin(), out.end(), -1);
      exe.launch(q).wait();
      CHECK(std::all_of(out.begin(), out.end(), [](int v) { return v == 7; }));
    }
  }
}

TEST_CASE("cuda.transients.updates_and_clones" * doctest::timeout(120)) {
  const Device gpu = Device::cuda(0);
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    Pipeline p(1 << 16);
    Executable exe = compile(p.cmd, gpu, {.backend = backend});
    // Scale by 5: a new functor recorded with the placeholders, rewritten by the update, and
    // carried into the clone.
    exe.update(p.stage1, Affine{p.t1.data(), p.t0.data(), 5, 0});
    Executable copy = exe.clone();
    HostBuffer<float> other(p.n);
    std::fill(other.begin(), other.end(), -1.0f);
    copy.update(p.save, other, p.t3, p.n);
    Queue q1(gpu), q2(gpu);
    for (int i = 0; i < 10; ++i) {
      exe.launch(q1);
      copy.launch(q2);
    }
    q1.wait();
    q2.wait();
    bool right = true;
    for (std::size_t i = 0; i < p.n; ++i) {
      right &= p.out[i] == 3 * (5 * p.in[i] + 1) && other[i] == p.out[i];
    }
    CHECK(right);
  }
}

TEST_CASE("cuda.transients.rerecorded_update" * doctest::timeout(120)) {
  const Device gpu = Device::cuda(0);
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    Pipeline p(1 << 16);
    Executable exe = compile(p.cmd, gpu, {.backend = backend});
    Queue q(gpu);
    exe.launch(q).wait();
    CHECK(p.right());
    Pipeline again(1 << 16);  // new placeholders, same structure and sizes
    const UpdateResult r = exe.update(again.cmd, {.reinstantiate_if_needed = true});
    MESSAGE(std::string(to_string(backend)) << ": re-recorded update "
                               << (r.reinstantiated ? "reinstantiated: " + r.reason : "in place"));
    exe.launch(q).wait();
    CHECK(again.right());
    Pipeline bigger(1 << 17);  // other sizes: a CUDA graph rebuilds, or refuses when not allowed
    if (backend == Backend::cuda_graph) {
      CMDGRAPH_EXPECT_ERROR(exe.update(bigger.cmd), errc::update_refused);
      Pipeline bigger_again(1 << 17);
      CHECK(exe.update(bigger_again.cmd, {.reinstantiate_if_needed = true}).reinstantiated);
      exe.launch(q).wait();
      CHECK(bigger_again.right());
    } else {
      exe.update(bigger.cmd);
      exe.launch(q).wait();
      CHECK(bigger.right());
    }
  }
}

TEST_CASE("cuda.transients.refusals" * doctest::timeout(60)) {
  const Device gpu = Device::cuda(0);
  Buffer<float> x(gpu, 64);
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    CommandBuffer cmd("late");
    auto t = cmd.alloc<float>(64).named("t");
    auto r = cmd.free(t).after(t).named("release");
    cmd.parallel_for(64, Affine{t.data(), x.data(), 1, 0}).after(r).named("reader");
    auto e = CMDGRAPH_EXPECT_ERROR(compile(cmd, gpu, {.backend = backend}), errc::hazard);
    REQUIRE(e);
    CHECK(mentions(*e, "command 'reader' uses transient memory 't' after its free"));
    CHECK_FALSE(cmd.sealed());
  }
  CommandBuffer body("body");
  body.alloc<float>(4).named("scratch");
  CommandBuffer loop("loop");
  CMDGRAPH_EXPECT_ERROR(loop.loop_while(body, Never{}), errc::unsupported);
}
