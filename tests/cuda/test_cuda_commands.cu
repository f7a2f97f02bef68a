// Every command kind on both CUDA backends, outputs poisoned first: copies (pinned and
// pageable), fills of every width, kernels, parallel_for, host tasks, nesting, capture, events.
#include "cuda/kernels.cuh"
#include "support/expect_error.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <numeric>

using namespace cmdgraph;
using namespace cmdgraph::testing;

TEST_CASE("cuda.commands.pipeline" * doctest::timeout(60)) {
  const Device gpu = Device::cuda(0);
  const int n = 1 << 16;
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    HostBuffer<float> in(n), out(n);
    std::iota(in.begin(), in.end(), 0.0f);
    std::fill(out.begin(), out.end(), -1.0f);  // poison
    Buffer<float> x(gpu, n), y(gpu, n);
    CommandBuffer cmd("pipeline");
    auto up = cmd.copy(x, in, n).named("upload");
    auto scale = cmd.parallel_for(n, Scale{x.data(), y.data(), 2.0f}).after(up).named("scale");
    auto axpy = cmd.launch(&axpy_kernel, LaunchConfig{{(n + 255) / 256}, {256}}, n, 0.5, x.data(),
                           y.data()).after(scale).named("axpy");
    cmd.copy(out, y, n).after(axpy).named("download");
    Executable exe = compile(cmd, gpu, {.backend = backend});
    Queue q(gpu);
    for (int i = 0; i < 3; ++i) exe.launch(q);
    q.wait();
    bool right = true;
    for (int i = 0; i < n; ++i) right &= out[i] == 2.5f * static_cast<float>(i);
    CHECK(right);
  }
}

TEST_CASE("cuda.commands.fill_every_width" * doctest::timeout(60)) {
  const Device gpu = Device::cuda(0);
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    Buffer<std::uint8_t> b(gpu, 9);
    Buffer<std::uint16_t> h(gpu, 9);
    Buffer<float> f(gpu, 9);
    TEST_CUDA(cudaMemset(b.data(), 0xEE, 9));
    TEST_CUDA(cudaMemset(h.data(), 0xEE, 18));
    TEST_CUDA(cudaMemset(f.data(), 0xEE, 36));
    TEST_CUDA(cudaDeviceSynchronize());  // the legacy stream does not order our queues
    CommandBuffer cmd("fills");
    cmd.fill(b, 0x5A, 8);
    cmd.fill(h, 0x1234, 8);
    cmd.fill(f, 0.25f, 8);
    Queue q(gpu);
    compile(cmd, gpu, {.backend = backend}).launch(q).wait();
    std::uint8_t hb[9];
    std::uint16_t hh[9];
    float hf[9];
    TEST_CUDA(cudaMemcpy(hb, b.data(), 9, cudaMemcpyDeviceToHost));
    TEST_CUDA(cudaMemcpy(hh, h.data(), 18, cudaMemcpyDeviceToHost));
    TEST_CUDA(cudaMemcpy(hf, f.data(), 36, cudaMemcpyDeviceToHost));
    for (int i = 0; i < 8; ++i) {
      CHECK(hb[i] == 0x5A);
      CHECK(hh[i] == 0x1234);
      CHECK(hf[i] == 0.25f);
    }
    CHECK(hb[8] == 0xEE);
    CHECK(hh[8] == 0xEEEE);
  }
}

TEST_CASE("cuda.commands.pageable_copies" * doctest::timeout(60)) {
  const Device gpu = Device::cuda(0);
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    std::vector<int> src(1000), dst(1000, -1);
    std::iota(src.begin(), src.end(), 7);
    Buffer<int> d(gpu, 1000);
    CommandBuffer cmd("pageable");
    auto up = cmd.copy(d, host_view(src.data(), src.size()), 1000);
    cmd.copy(host_view(dst.data(), dst.size()), d, 1000).after(up);
    Queue q(gpu);
    compile(cmd, gpu, {.backend = backend}).launch(q).wait();
    CHECK(dst == src);
  }
}

TEST_CASE("cuda.commands.host_tasks_in_order" * doctest::timeout(60)) {
  const Device gpu = Device::cuda(0);
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    HostBuffer<int> staged(4);
    std::fill(staged.begin(), staged.end(), -1);
    Buffer<int> d(gpu, 4);
    std::vector<int> seen;
    CommandBuffer cmd("host");
    auto before = cmd.host([&] { seen.push_back(staged[0]); }).named("before");
    auto set = cmd.launch(&set_kernel, LaunchConfig{{1}, {4}}, 4, 42, d.data()).after(before);
    auto down = cmd.copy(staged, d, 4).after(set);
    cmd.host([&] { seen.push_back(staged[3]); }).after(down).named("after");
    Queue q(gpu);
    compile(cmd, gpu, {.backend = backend}).launch(q).wait();
    CHECK(seen == std::vector<int>{-1, 42});
  }
}

TEST_CASE("cuda.commands.nested_twice" * doctest::timeout(60)) {
  const Device gpu = Device::cuda(0);
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    Buffer<int> counter(gpu, 1);
    HostBuffer<int> out(2);
    out[0] = out[1] = -1;
    CommandBuffer inner("inner");
    inner.launch(&increment, LaunchConfig{{1}, {1}}, counter.data());
    CommandBuffer outer("outer");
    auto zero = outer.fill(counter, 0, 1);
    auto once = outer.execute(inner).after(zero);
    auto mid = outer.copy(out.subview(0, 1), counter, 1).after(once);
    auto twice = outer.execute(inner).after(mid);
    outer.copy(out.subview(1, 1), counter, 1).after(twice);
    Queue q(gpu);
    compile(outer, gpu, {.backend = backend}).launch(q).wait();
    CHECK(out[0] == 1);
    CHECK(out[1] == 2);
  }
}

TEST_CASE("cuda.commands.capture_library_calls" * doctest::timeout(60)) {
  const Device gpu = Device::cuda(0);
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    const int n = 256;
    HostBuffer<float> in(n), out(n);
    std::fill(in.begin(), in.end(), 3.0f);
    std::fill(out.begin(), out.end(), -1.0f);
    Buffer<float> x(gpu, n), y(gpu, n);
    int calls = 0;
    CommandBuffer cmd("capture");
    // A library-like call: an async copy and a kernel on the stream it is given.
    auto lib = cmd.capture([&](NativeStream s) {
      ++calls;
      TEST_CUDA(cudaMemcpyAsync(x.data(), in.data(), n * sizeof(float), cudaMemcpyHostToDevice, s));
      TEST_CUDA(cudaMemsetAsync(y.data(), 0, n * sizeof(float), s));
      axpy_kernel<<<1, n, 0, s>>>(n, 2.0f, x.data(), y.data());
      TEST_CUDA(cudaGetLastError());
    }).named("library");
    cmd.copy(out, y, n).after(lib);
    Executable exe = compile(cmd, gpu, {.backend = backend});
    Queue q(gpu);
    exe.launch(q);
    exe.launch(q).wait();
    CHECK(std::all_of(out.begin(), out.end(), [](float v) { return v == 6.0f; }));
    // The graph captured the calls once, at compile time; streams make them at each launch.
    CHECK(calls == (backend == Backend::cuda_graph ? 1 : 2));
  }
}

TEST_CASE("cuda.commands.events_across_queues" * doctest::timeout(60)) {
  const Device gpu = Device::cuda(0);
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    HostBuffer<int> flag(1), out(1);
    flag[0] = 0;
    out[0] = -1;
    Buffer<int> d(gpu, 1);
    Event ready(gpu);
    CommandBuffer producer("producer");
    auto spin = producer.launch(&spin_until, LaunchConfig{{1}, {1}}, flag.data());
    auto set = producer.launch(&set_kernel, LaunchConfig{{1}, {1}}, 1, 99, d.data()).after(spin);
    producer.record(ready).after(set);
    CommandBuffer consumer("consumer");
    auto w = consumer.wait(ready);
    consumer.copy(out, d, 1).after(w);
    Executable p = compile(producer, gpu, {.backend = backend});
    Executable c = compile(consumer, gpu, {.backend = backend});
    Queue q1(gpu), q2(gpu);
    Fence pf = p.launch(q1);  // held by the spinning kernel
    Fence cf = c.launch(q2);  // must wait for the producer's record
    CHECK_FALSE(cf.wait_for(std::chrono::milliseconds(20)));
    reinterpret_cast<volatile int*>(flag.data())[0] = 1;
    pf.wait();
    cf.wait();
    CHECK(out[0] == 99);
  }
}

TEST_CASE("cuda.commands.host_task_throws" * doctest::timeout(60)) {
  const Device gpu = Device::cuda(0);
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    Buffer<int> counter(gpu, 1);
    HostBuffer<int> out(1);
    bool fail = true;
    CommandBuffer cmd("failing");
    auto zero = cmd.fill(counter, 0, 1);
    auto bad = cmd.host([&] {
      if (fail) throw std::runtime_error("sensor offline");
    }).after(zero).named("read sensor");
    auto inc = cmd.launch(&increment, LaunchConfig{{1}, {1}}, counter.data()).after(bad);
    cmd.copy(out, counter, 1).after(inc);
    Executable exe = compile(cmd, gpu, {.backend = backend});
    Queue q(gpu);
    auto e = CMDGRAPH_EXPECT_ERROR(exe.launch(q).wait(), errc::host_task_failed);
    REQUIRE(e);
    CHECK(e->commands() == std::vector<std::string>{"read sensor"});
    CHECK(mentions(*e, "sensor offline"));
    CHECK(out[0] == 1);  // GPU work enqueued after it still ran
    CMDGRAPH_EXPECT_ERROR(q.wait(), errc::host_task_failed);  // the queue reports it once
    q.wait();
    fail = false;
    exe.launch(q).wait();  // the next launch is clean
  }
}

TEST_CASE("cuda.relaunch.thousand_without_waits" * doctest::timeout(60)) {
  const Device gpu = Device::cuda(0);
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    Buffer<int> counter(gpu, 1);
    TEST_CUDA(cudaMemset(counter.data(), 0, 4));
    TEST_CUDA(cudaDeviceSynchronize());
    CommandBuffer cmd("count");
    auto a = cmd.launch(&increment, LaunchConfig{{1}, {1}}, counter.data());
    cmd.launch(&increment, LaunchConfig{{1}, {1}}, counter.data()).after(a);
    cmd.launch(&increment, LaunchConfig{{1}, {1}}, counter.data());
    Executable exe = compile(cmd, gpu, {.backend = backend});
    Queue q1(gpu), q2(gpu);
    for (int i = 0; i < 1000; ++i) exe.launch(i % 2 ? q1 : q2);
    q1.wait();
    q2.wait();
    int value = 0;
    TEST_CUDA(cudaMemcpy(&value, counter.data(), 4, cudaMemcpyDeviceToHost));
    CHECK(value == 3000);
  }
}

TEST_CASE("cuda.clone.runs_concurrently" * doctest::timeout(60)) {
  const Device gpu = Device::cuda(0);
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    HostBuffer<int> flag(1);
    flag[0] = 0;
    CommandBuffer cmd("spin");
    cmd.launch(&spin_until, LaunchConfig{{1}, {1}}, flag.data());
    Executable a = compile(cmd, gpu, {.backend = backend});
    Executable b = a.clone();
    CHECK(b.backend() == backend);
    Queue q1(gpu), q2(gpu);
    Fence fa = a.launch(q1), fb = b.launch(q2);
    // Both spin at once: neither can finish before the flag, and both finish after it.
    CHECK_FALSE(fa.wait_for(std::chrono::milliseconds(10)));
    CHECK_FALSE(fb.ready());
    reinterpret_cast<volatile int*>(flag.data())[0] = 1;
    fa.wait();
    fb.wait();
  }
}

TEST_CASE("cuda.empty_buffer" * doctest::timeout(30)) {
  const Device gpu = Device::cuda(0);
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    CommandBuffer cmd("empty");
    Executable exe = compile(cmd, gpu, {.backend = backend});
    Queue q(gpu);
    exe.launch(q);
    exe.launch(q).wait();
    q.wait();
  }
}

TEST_CASE("cuda.device.properties_and_queues" * doctest::timeout(30)) {
  const Device gpu = Device::best();
  REQUIRE(gpu.is_cuda());
  const DeviceProperties p = gpu.properties();
  CHECK(p.multiprocessors > 0);
  CHECK(p.compute_major >= 7);
  CHECK(p.total_memory > 0);
  CHECK(p.greatest_priority <= p.least_priority);
  Queue high(gpu, Priority::high), low(gpu, Priority::low);
  CHECK(high.native_handle() != nullptr);
  CHECK(high.native_handle() != low.native_handle());
  int prio_high = 0, prio_low = 0;
  TEST_CUDA(cudaStreamGetPriority(high.native_handle(), &prio_high));
  TEST_CUDA(cudaStreamGetPriority(low.native_handle(), &prio_low));
  CHECK(prio_high == p.greatest_priority);
  CHECK(prio_low == p.least_priority);
}

TEST_CASE("cuda.fence.marks_each_launch_it_is_held_for" * doctest::timeout(60)) {
  // A fence kept while the next launch is enqueued signals when its own launch ends, not when
  // the queue drains; fences nobody keeps cost no event, and the queue still reports errors.
  const Device gpu = Device::cuda(0);
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    HostBuffer<int> flag(1);
    flag[0] = 0;
    Buffer<int> counter(gpu, 1);
    CommandBuffer quick("quick"), slow("slow");
    quick.launch(&increment, LaunchConfig{{1}, {1}}, counter.data());
    slow.launch(&spin_until, LaunchConfig{{1}, {1}}, flag.data());
    Executable q_exe = compile(quick, gpu, {.backend = backend});
    Executable s_exe = compile(slow, gpu, {.backend = backend});
    Queue q(gpu);
    for (int i = 0; i < 10; ++i) q_exe.launch(q);  // fences dropped
    Fence kept = q_exe.launch(q);
    Fence blocked = s_exe.launch(q);                // enqueued behind `kept`
    CHECK(kept.wait_for(std::chrono::seconds(5)));  // ends while the spinner still spins
    CHECK_FALSE(blocked.ready());
    reinterpret_cast<volatile int*>(flag.data())[0] = 1;
    blocked.wait();
    q.wait();
    int value = 0;
    TEST_CUDA(cudaMemcpy(&value, counter.data(), 4, cudaMemcpyDeviceToHost));
    CHECK(value >= 11);
  }
}
