// Updates on both CUDA backends: new values take effect on the next launch and not before,
// never in a launch already in flight; re-recorded buffers update in place or are refused.
#include "cuda/kernels.cuh"
#include "support/expect_error.hpp"

#include <doctest/doctest.h>

using namespace cmdgraph;
using namespace cmdgraph::testing;

namespace {

int read_int(const Buffer<int>& b, std::size_t i = 0) {
  int v = 0;
  TEST_CUDA(cudaMemcpy(&v, b.data() + i, sizeof(int), cudaMemcpyDeviceToHost));
  return v;
}

struct SetValue {
  int* out;
  int value;
  __host__ __device__ void operator()(std::size_t i) const { out[i] = value; }
};

// SetValue without padding: whether nvcc's front end can clear a functor's padding is its own
// matter (reported below), not what the frame test asks.
struct SetWide {
  int* out;
  long long value;
  __host__ __device__ void operator()(std::size_t i) const { out[i] = static_cast<int>(value); }
};

}  // namespace

TEST_CASE("cuda.update.kernel_arguments_next_launch_only" * doctest::timeout(60)) {
  const Device gpu = Device::cuda(0);
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    HostBuffer<int> flag(1);
    flag[0] = 0;
    Buffer<int> out(gpu, 4);
    CommandBuffer cmd("update");
    auto gate = cmd.launch(&spin_until, LaunchConfig{{1}, {1}}, flag.data());
    auto set = cmd.launch(&set_kernel, LaunchConfig{{1}, {4}}, 4, 1, out.data()).after(gate);
    Executable exe = compile(cmd, gpu, {.backend = backend});
    Queue q(gpu);
    Fence first = exe.launch(q);     // held at the gate
    exe.update(set, 4, 2, out.data());  // while it is in flight
    reinterpret_cast<volatile int*>(flag.data())[0] = 1;
    first.wait();
    CHECK(read_int(out) == 1);       // the launch in flight kept its values
    exe.launch(q).wait();
    CHECK(read_int(out, 3) == 2);    // the next one has the new ones
    exe.update(set, LaunchConfig{{1}, {2}});  // launch dimensions too
    exe.update(set, 4, 3, out.data());
    exe.launch(q).wait();
    CHECK(read_int(out, 1) == 3);
    CHECK(read_int(out, 2) == 2);    // only two threads ran
  }
}

TEST_CASE("cuda.update.parallel_for_copy_fill" * doctest::timeout(60)) {
  const Device gpu = Device::cuda(0);
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    Buffer<int> a(gpu, 64), b(gpu, 64), c(gpu, 64);
    HostBuffer<int> out(64);
    CommandBuffer cmd("values");
    auto pf = cmd.parallel_for(8, SetValue{a.data(), 5});
    auto fill = cmd.fill(b, 1, 8);
    auto down = cmd.copy(out.subview(0, 8), a, 8).after(pf, fill);
    Executable exe = compile(cmd, gpu, {.backend = backend});
    Queue q(gpu);
    exe.launch(q).wait();
    CHECK(out[7] == 5);
    exe.update(pf, 64, SetValue{a.data(), 6});     // new functor, larger range
    exe.update(fill, c, 9, 64);                     // new destination, value and count
    exe.update(down, out, c, 64);                   // copy the filled buffer instead
    exe.launch(q).wait();
    CHECK(out[0] == 9);
    CHECK(out[63] == 9);
    CHECK(read_int(a, 63) == 6);
    CMDGRAPH_EXPECT_ERROR(exe.update(fill, c, 9, 65), errc::invalid_argument);
  }
}

TEST_CASE("cuda.update.rerecorded_in_place_or_refused" * doctest::timeout(60)) {
  const Device gpu = Device::cuda(0);
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    Buffer<int> out(gpu, 4);
    bool host_ran = false;
    auto record = [&](CommandBuffer& cmd, int value) {
      auto s = cmd.launch(&set_kernel, LaunchConfig{{1}, {4}}, 4, value, out.data()).named("set");
      cmd.host([&] { host_ran = true; }).after(s).named("note");
    };
    CommandBuffer v1("v1");
    record(v1, 1);
    Executable exe = compile(v1, gpu, {.backend = backend});
    Queue q(gpu);
    exe.launch(q).wait();
    CHECK(read_int(out) == 1);

    CommandBuffer v2("v2");
    record(v2, 2);
    const UpdateResult r = exe.update(v2);
    CHECK_FALSE(r.reinstantiated);
    host_ran = false;
    exe.launch(q).wait();
    CHECK(read_int(out) == 2);
    CHECK(host_ran);

    // A different kernel: refused, naming the command; nothing changes.
    CommandBuffer v3("v3");
    v3.launch(&increment, LaunchConfig{{1}, {1}}, out.data()).named("set");
    v3.host([] {}).named("note");
    auto e = CMDGRAPH_EXPECT_ERROR(exe.update(v3), errc::update_refused);
    REQUIRE(e);
    CHECK(e->commands() == std::vector<std::string>{"set"});
    exe.launch(q).wait();
    CHECK(read_int(out) == 2);
    const UpdateResult rebuilt = exe.update(v3, {.reinstantiate_if_needed = true});
    CHECK(rebuilt.reinstantiated);
    exe.launch(q).wait();
    CHECK(read_int(out) == 3);
  }
}

TEST_CASE("cuda.update.cuda_refuses_memory_kind_change" * doctest::timeout(60)) {
  // Same structure by our rules, but a copy node changes from host->device to
  // device->device: CUDA's own update check decides, and its reason reaches the user.
  const Device gpu = Device::cuda(0);
  Buffer<int> a(gpu, 4), b(gpu, 4);
  HostBuffer<int> h(4);
  CommandBuffer v1("v1");
  v1.copy(a, h, 4).named("move");
  Executable exe = compile(v1, gpu, {.backend = Backend::cuda_graph});
  CommandBuffer v2("v2");
  v2.copy(a, b, 4).named("move");
  try {
    const UpdateResult r = exe.update(v2);
    CHECK_FALSE(r.reinstantiated);  // CUDA accepted it in place: still a valid outcome
    MESSAGE("CUDA accepted a memory-kind change of a memcpy node in place");
  } catch (const Error& e) {
    CHECK(e.code() == errc::update_refused);
    CHECK(mentions(e, "CUDA refused"));
    CHECK(e.commands() == std::vector<std::string>{"move"});
  }
  Queue q(gpu);
  exe.launch(q).wait();
}

TEST_CASE("cuda.update.a_rerecorded_frame_sets_only_what_changed" * doctest::timeout(60)) {
  const Device gpu = Device::cuda(0);
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    HostBuffer<int> flag(1);
    Buffer<int> a(gpu, 4), b(gpu, 4), c(gpu, 8);
    auto frame = [&](CommandBuffer& cmd, int va, int vb, int vc) {
      auto gate = cmd.launch(&spin_until, LaunchConfig{{1}, {1}}, flag.data()).named("gate");
      cmd.launch(&set_kernel, LaunchConfig{{1}, {4}}, 4, va, a.data()).after(gate).named("a");
      cmd.parallel_for(4, SetWide{b.data(), vb}).after(gate).named("b");
      cmd.fill(c, vc, 8).after(gate).named("c");
    };
    CommandBuffer first("frame");
    frame(first, 1, 2, 3);
    Executable exe = compile(first, gpu, {.backend = backend});
    Queue q(gpu);
    flag[0] = 1;
    exe.launch(q).wait();

    CommandBuffer same("frame");
    frame(same, 1, 2, 3);
    CHECK(exe.update(same).commands_changed == 0);
    MESSAGE("nvcc clears a recorded functor's padding: ",
            detail::padding_clearer<SetValue>() != nullptr);

    flag[0] = 0;
    Fence held = exe.launch(q);  // waits at the gate while the next frame is taken
    CommandBuffer next("frame");
    frame(next, 1, 20, 30);
    const UpdateResult r = exe.update(next);
    CHECK_FALSE(r.reinstantiated);
    CHECK(r.commands_changed == 2);
    reinterpret_cast<volatile int*>(flag.data())[0] = 1;
    held.wait();
    CHECK(read_int(b) == 2);  // the launch in flight kept its values
    CHECK(read_int(c, 7) == 3);
    exe.launch(q).wait();
    CHECK(read_int(a, 3) == 1);
    CHECK(read_int(b, 3) == 20);
    CHECK(read_int(c, 7) == 30);
  }
}

TEST_CASE("cuda.update.a_frame_cuda_refuses_node_by_node_changes_nothing" * doctest::timeout(60)) {
  // A copy from host to device memory becomes one from device to device: per-node, CUDA may
  // refuse it; the executable then gives the node its old values back and the whole path
  // decides, as for any re-recorded buffer.
  const Device gpu = Device::cuda(0);
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    Buffer<int> a(gpu, 4), b(gpu, 4);
    HostBuffer<int> h(4);
    for (int i = 0; i < 4; ++i) h[i] = 7;
    TEST_CUDA(cudaMemset(b.data(), 0, 4 * sizeof(int)));
    CommandBuffer v1("frame");
    v1.copy(a, h, 4).named("move");
    Executable exe = compile(v1, gpu, {.backend = backend});
    CommandBuffer v2("frame");
    v2.copy(a, b, 4).named("move");
    int expected = 0;  // b's, when the update is taken
    try {
      CHECK(exe.update(v2).commands_changed == 1);
    } catch (const Error& e) {
      CHECK(e.code() == errc::update_refused);
      CHECK(e.commands() == std::vector<std::string>{"move"});
      expected = 7;  // refused: the copy from h stands
    }
    TEST_CUDA(cudaMemset(a.data(), 0xff, 4 * sizeof(int)));
    // The memsets run on the legacy stream, which q's does not wait for.
    TEST_CUDA(cudaDeviceSynchronize());
    Queue q(gpu);
    exe.launch(q).wait();
    CHECK(read_int(a, 3) == expected);
  }
}

TEST_CASE("cuda.update.a_rerecorded_pass_sets_only_its_changed_commands" * doctest::timeout(60)) {
  // An engine's frame: passes recorded as secondaries (one executing another) and executed by a
  // primary whose own kernel is update-free. CUDA updates no graph with an update-free kernel
  // as a whole, so new values inside a pass are taken command by command or refused: they must
  // be taken, in place, and a launch in flight keeps the values it was launched with.
  const Device gpu = Device::cuda(0);
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    HostBuffer<int> flag(1);
    Buffer<int> a(gpu, 4), b(gpu, 4), c(gpu, 4), r(gpu, 4);
    auto frame = [&](CommandBuffer& primary, int va, int vc, int vr) {
      CommandBuffer pass_a("pass a"), inner("inner"), pass_c("pass c");
      pass_a.launch(&set_kernel, LaunchConfig{{1}, {4}}, 4, va, a.data()).named("set a");
      pass_a.launch(&set_kernel, LaunchConfig{{1}, {4}}, 4, 7, b.data()).named("set b");
      inner.launch(&set_kernel, LaunchConfig{{1}, {4}}, 4, vc, c.data()).named("set c");
      pass_c.execute(inner).named("inner");
      auto gate = primary.launch(&spin_until, LaunchConfig{{1}, {1}}, flag.data()).named("gate");
      primary.launch(&set_kernel, LaunchConfig{{1}, {4}}, 4, vr, r.data())
          .after(gate)
          .named("set r")
          .update_free();
      primary.execute(pass_a).after(gate).named("a");
      primary.execute(pass_c).after(gate).named("c");
    };
    auto poison = [&] {
      for (Buffer<int>* out : {&a, &b, &c, &r}) {
        TEST_CUDA(cudaMemset(out->data(), 0xff, 4 * sizeof(int)));
      }
      TEST_CUDA(cudaDeviceSynchronize());  // the memsets run on the legacy stream
    };
    CommandBuffer first("frame");
    frame(first, 1, 3, 5);
    Executable exe = compile(first, gpu, {.backend = backend});
    Queue q(gpu);
    auto launch_and_check = [&](int va, int vc, int vr) {
      poison();
      exe.launch(q).wait();
      CHECK(read_int(a, 3) == va);
      CHECK(read_int(b, 3) == 7);
      CHECK(read_int(c, 3) == vc);
      CHECK(read_int(r, 3) == vr);
    };
    flag[0] = 1;
    poison();
    exe.launch(q).wait();
    CHECK(read_int(a, 3) == 1);
    CHECK(read_int(c, 3) == 3);

    flag[0] = 0;
    poison();
    Fence held = exe.launch(q);  // waits at the gate while the next frame is taken
    {
      // The gate opens however the update ends (a refusal throws), or the launch never ends.
      struct Open {
        int* flag;
        ~Open() { reinterpret_cast<volatile int*>(flag)[0] = 1; }
      } open{flag.data()};
      CommandBuffer next("frame");
      frame(next, 10, 30, 5);
      const UpdateResult taken = exe.update(next);
      CHECK_FALSE(taken.reinstantiated);
      CHECK(taken.commands_changed == 2);
    }
    held.wait();
    CHECK(read_int(a, 3) == 1);  // the launch in flight kept its values
    CHECK(read_int(c, 3) == 3);
    launch_and_check(10, 30, 5);

    // The primary's kernel and a pass's at once, then the pass's values of the first frame.
    CommandBuffer both("frame");
    frame(both, 10, 31, 50);
    CHECK(exe.update(both).commands_changed == 2);
    CommandBuffer back("frame");
    frame(back, 1, 31, 50);
    CHECK(exe.update(back).commands_changed == 1);
    launch_and_check(1, 31, 50);
  }
}
