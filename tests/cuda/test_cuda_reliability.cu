// Faults and misuse on CUDA: every call of a whole compile-launch-update-destroy sequence (an
// if_else in it) made to fail in turn, destroying owners while work is in flight, 100,000-command graphs, one
// executable launched from two threads, pinned memory beyond the machine refused.
#include "cuda/fault_injection.hpp"
#include "cuda/handles.hpp"
#include "cuda/kernels.cuh"
#include "support/expect_error.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <set>
#include <thread>

using namespace cmdgraph;
using namespace cmdgraph::testing;
using detail::cuda::FaultInjection;
using namespace std::chrono_literals;

namespace {

struct AddOne {
  int* data;
  __host__ __device__ void operator()(std::size_t i) const { data[i] += 1; }
};

struct IsEven {
  const int* data;
  __host__ __device__ bool operator()() const { return data[0] % 2 == 0; }
};

const std::set<std::string> names = {"set",  "bump",   "down",    "clear",   "note",
                                     "mark", "hold",   "lib",     "inner",   "inner/set2",
                                     "choose", "then/up", "else/up"};

// Compile, launch twice, update a kernel and a copy, update the whole buffer (an if_else's
// condition and branches included: a graph of its own on the streams backend), destroy all.
void mixed_sequence(Backend backend, int* dev, int* dev2, int* host) {
  const Device gpu = Device::cuda(0);
  Event ev(gpu);
  auto record = [&](CommandBuffer& cmd, int value) {
    CommandBuffer inner("inner");
    inner.launch(&set_kernel, LaunchConfig{{1}, {64}}, 64, value, dev2).named("set2");
    auto clear = cmd.fill(View<int>(dev, 64, MemorySpace::device, 0), 0, 64).named("clear");
    auto set = cmd.launch(&set_kernel, LaunchConfig{{1}, {64}}, 64, value, dev).named("set").after(clear);
    auto bump = cmd.parallel_for(64, AddOne{dev}).named("bump").after(set);
    CommandBuffer then_body("then"), else_body("else");
    then_body.parallel_for(1, AddOne{dev2 + 1}).named("up");
    else_body.parallel_for(1, AddOne{dev2 + 2}).named("up");
    auto choose = cmd.if_else(IsEven{dev}, then_body, else_body).named("choose").after(bump);
    auto nested = cmd.execute(inner).named("inner").after(choose);
    auto mark = cmd.record(ev).named("mark").after(nested);
    auto hold = cmd.wait(ev).named("hold").after(mark);
    auto lib = cmd.capture([&](NativeStream s) { TEST_CUDA(cudaMemsetAsync(dev2, 0, 4, s)); }).named("lib").after(hold);
    auto down = cmd.copy(View<int>(host, 64, MemorySpace::pinned, -1), View<int>(dev, 64, MemorySpace::device, 0), 64)
                    .named("down").after(lib);
    cmd.host([] {}).named("note").after(down);
    return set;
  };
  CommandBuffer cmd("mixed");
  auto set = record(cmd, 1);
  Executable exe = compile(cmd, gpu, {.backend = backend});
  Queue q(gpu);
  exe.launch(q);
  exe.launch(q).wait();
  exe.update(set, 64, 5, dev);
  exe.launch(q).wait();
  CommandBuffer again("mixed");
  record(again, 7);
  exe.update(again);
  exe.launch(q).wait();
  q.wait();
}

}  // namespace

TEST_CASE("cuda.reliability.every_cuda_call_fails_in_turn" * doctest::timeout(900)) {
  const Device gpu = Device::cuda(0);
  Buffer<int> dev(gpu, 64), dev2(gpu, 64);
  HostBuffer<int> host(64);
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    mixed_sequence(backend, dev.data(), dev2.data(), host.data());  // warm: first-use costs
    TEST_CUDA(cudaDeviceSynchronize());
    const detail::cuda::LiveCounts baseline = detail::cuda::live_counts();
    FaultInjection::count_calls();
    mixed_sequence(backend, dev.data(), dev2.data(), host.data());
    const std::uint64_t total = FaultInjection::calls();
    FaultInjection::disarm();
    CHECK(host[0] == 8);  // 7, plus one
    REQUIRE(total > 30);
    std::size_t surfaced = 0;
    for (std::uint64_t n = 1; n <= total; ++n) {
      CAPTURE(n);
      FaultInjection::fail_call(n, cudaErrorMemoryAllocation);
      try {
        mixed_sequence(backend, dev.data(), dev2.data(), host.data());
      } catch (const Error& e) {
        ++surfaced;
        // A failed cudaGraphExecUpdate is CUDA refusing the update: update_refused.
        CHECK_MESSAGE((e.code() == errc::out_of_memory || e.code() == errc::cuda_error ||
                       e.code() == errc::host_task_failed || e.code() == errc::unsupported ||
                       e.code() == errc::update_refused),
                      std::string(e.what()));
        for (const std::string& name : e.commands()) CHECK_MESSAGE(names.count(name), name);
      }
      FaultInjection::disarm();
      TEST_CUDA(cudaDeviceSynchronize());
      (void)cudaGetLastError();
      // Everything the failed attempt created is gone...
      CHECK(detail::cuda::live_counts() == baseline);
      // ...and the library works again at once.
      std::fill(host.begin(), host.end(), -1);
      mixed_sequence(backend, dev.data(), dev2.data(), host.data());
      CHECK(host[0] == 8);
    }
    MESSAGE(std::string(to_string(backend)) << ": " << total << " CUDA calls, each failed once; " << surfaced
                         << " surfaced as errors, the rest were in cleanup or retried");
    CHECK(surfaced > total / 2);
  }
}

TEST_CASE("cuda.reliability.destroy_while_in_flight" * doctest::timeout(60)) {
  const Device gpu = Device::cuda(0);
  HostBuffer<int> flag(1);
  auto release_later = [&] {
    return std::thread([&] {
      std::this_thread::sleep_for(30ms);
      reinterpret_cast<volatile int*>(flag.data())[0] = 1;
    });
  };
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    SUBCASE("the executable") {
      flag[0] = 0;
      Queue q(gpu);
      bool ran = false;
      Fence f;
      {
        CommandBuffer cmd("held");
        auto spin = cmd.launch(&spin_until, LaunchConfig{{1}, {1}}, flag.data());
        cmd.host([&] { ran = true; }).after(spin);
        Executable exe = compile(cmd, gpu, {.backend = backend});
        f = exe.launch(q);
        std::thread releaser = release_later();
        // Leaving the scope destroys the executable while its kernel spins: the destructor
        // waits (the host task still needs the executable's callback), it does not crash.
        releaser.detach();
      }
      f.wait();
      CHECK(ran);
    }
    SUBCASE("a buffer's owner") {
      flag[0] = 0;
      Queue q(gpu);
      CommandBuffer cmd("held");
      auto out = std::make_unique<Buffer<int>>(gpu, 1024);
      auto spin = cmd.launch(&spin_until, LaunchConfig{{1}, {1}}, flag.data());
      cmd.launch(&set_kernel, LaunchConfig{{4}, {256}}, 1024, 3, out->data()).after(spin);
      Executable exe = compile(cmd, gpu, {.backend = backend});
      exe.launch(q);
      std::thread releaser = release_later();
      out.reset();  // cudaFree waits for the device: the kernel finishes writing first
      releaser.join();
      q.wait();
    }
    SUBCASE("the queue") {
      flag[0] = 0;
      CommandBuffer cmd("held");
      cmd.launch(&spin_until, LaunchConfig{{1}, {1}}, flag.data());
      Executable exe = compile(cmd, gpu, {.backend = backend});
      Fence f;
      {
        Queue q(gpu);
        f = exe.launch(q);
        std::thread releaser = release_later();
        releaser.detach();
      }  // the queue's destructor waits for its stream
      CHECK(f.ready());
      f.wait();
    }
  }
}

TEST_CASE("cuda.reliability.hundred_thousand_commands" * doctest::timeout(300)) {
  const Device gpu = Device::cuda(0);
  Buffer<int> counter(gpu, 1);
  TEST_CUDA(cudaMemset(counter.data(), 0, sizeof(int)));
  TEST_CUDA(cudaDeviceSynchronize());
  CommandBuffer cmd("long chain");
  Command prev;
  for (int i = 0; i < 100000; ++i) {
    auto k = cmd.launch(&increment, LaunchConfig{{1}, {1}}, counter.data());
    if (i) k.after(prev);
    prev = k;
  }
  const auto t0 = std::chrono::steady_clock::now();
  Executable exe = compile(cmd, gpu, {.backend = Backend::cuda_graph});
  const double compile_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  Queue q(gpu);
  exe.launch(q).wait();
  int value = 0;
  TEST_CUDA(cudaMemcpy(&value, counter.data(), sizeof(int), cudaMemcpyDeviceToHost));
  CHECK(value == 100000);
  MESSAGE("100,000-kernel chain: compiled in " << compile_s << " s (plan " << exe.stats().plan_ms
                                               << " ms, instantiate " << exe.stats().instantiate_ms
                                               << " ms), launched once, all ran");
}

TEST_CASE("cuda.reliability.one_executable_two_threads" * doctest::timeout(60)) {
  const Device gpu = Device::cuda(0);
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    Buffer<int> counter(gpu, 1);
    TEST_CUDA(cudaMemset(counter.data(), 0, sizeof(int)));
    TEST_CUDA(cudaDeviceSynchronize());
    CommandBuffer cmd("shared");
    auto a = cmd.launch(&increment, LaunchConfig{{1}, {1}}, counter.data());
    cmd.launch(&increment, LaunchConfig{{1}, {1}}, counter.data()).after(a);
    Executable exe = compile(cmd, gpu, {.backend = backend});
    Queue q1(gpu), q2(gpu);
    std::thread t1([&] {
      for (int i = 0; i < 300; ++i) exe.launch(q1);
    });
    std::thread t2([&] {
      for (int i = 0; i < 300; ++i) exe.launch(q2);
    });
    t1.join();
    t2.join();
    q1.wait();
    q2.wait();
    int value = 0;
    TEST_CUDA(cudaMemcpy(&value, counter.data(), sizeof(int), cudaMemcpyDeviceToHost));
    CHECK(value == 1200);
  }
}

// Pinned memory is physical memory: cudaMallocHost asked for more than the machine has could
// pin until the OOM killer ended the process (the fuzzer's 32 TiB HostBuffer was killed after
// 85 s on the H200 machine). Refused at once, nothing held, the next allocation works.
TEST_CASE("cuda.reliability.pinned_beyond_physical_memory_refused" * doctest::timeout(30)) {
  const auto pinned_before = detail::cuda::live_counts().pinned_allocations;
  for (const std::size_t bytes : {std::size_t{1} << 45, std::size_t{1} << 62, ~std::size_t{0} - 1}) {
    const auto e = CMDGRAPH_EXPECT_ERROR(HostBuffer<std::uint8_t>{bytes}, errc::out_of_memory);
    REQUIRE(e);
    CHECK(mentions(*e, "physical memory"));
  }
  CHECK(detail::cuda::live_counts().pinned_allocations == pinned_before);
  CHECK(cudaGetLastError() == cudaSuccess);
  HostBuffer<int> small(16);
  CHECK(small.data() != nullptr);
}

TEST_CASE("cuda.reliability.typed_update_of_another_kernel_is_refused" * doctest::timeout(60)) {
  // A KernelCommand of another signature, made from a kernel command's reference, made
  // update() write its arguments over the recorded ones; the signature is checked now.
  const Device gpu = Device::cuda(0);
  Buffer<int> out(gpu, 64);
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    poison(out);
    CommandBuffer cmd("typed");
    auto set = cmd.launch(&set_kernel, LaunchConfig{{1}, {64}}, 64, 3, out.data()).named("set");
    Executable exe = compile(cmd, gpu, {.backend = backend});
    const KernelCommand<long long> forged(set.ref());
    auto e = CMDGRAPH_EXPECT_ERROR(exe.update(forged, 1LL << 40), errc::invalid_argument);
    REQUIRE(e);
    CHECK(e->commands() == std::vector<std::string>{"set"});
    CHECK(mentions(*e, "kernel signature"));
    const KernelCommand<int, int, float*> same_sizes(set.ref());  // right count, wrong types
    CMDGRAPH_EXPECT_ERROR(exe.update(same_sizes, 64, 5, nullptr), errc::invalid_argument);
    Queue queue(gpu);
    exe.update(set, 64, 7, out.data());  // the recorded handle still updates
    exe.launch(queue).wait();
    CHECK(read_ints(out) == std::vector<int>(64, 7));
  }
}

TEST_CASE("cuda.reliability.unordered_fills_are_hazards_by_default" * doctest::timeout(60)) {
  // Hazards::automatic validates a copy's and a fill's own ranges, on the CUDA backends too.
  const Device gpu = Device::cuda(0);
  Buffer<int> a(gpu, 64), b(gpu, 64);
  for (Backend backend : {Backend::automatic, Backend::cuda_graph, Backend::streams}) {
    CAPTURE(to_string(backend));
    CommandBuffer cmd("fills");
    cmd.fill(a, 1, 64).named("one");
    cmd.copy(b, a, 64).named("read");
    auto e = CMDGRAPH_EXPECT_ERROR(compile(cmd, gpu, {.backend = backend}), errc::hazard);
    REQUIRE(e);
    CHECK(e->commands() == std::vector<std::string>{"one", "read"});
  }
}
