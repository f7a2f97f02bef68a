// Executables launched from the device (CompileOptions::device_launch, device_launch.cuh): a
// kernel of one executable launches another, beside it or after it, or its own graph again
// (a loop the device drives); updates reach launches from the device through
// device_executable(); what a device graph cannot hold is refused at compile(), naming the
// command. Compiled with relocatable device code (tests/meson.build), as its users must.
#include "cuda/kernels.cuh"
#include "support/expect_error.hpp"

#include <cmdgraph/device_launch.cuh>

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace cmdgraph;
using namespace cmdgraph::testing;

namespace {

__global__ void set_all(int* out, int n, int value) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = value;
}

__global__ void add_one(int* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] += 1;
}

// Launches `child` beside the calling graph (`tail`: after it); CUDA's answer in *status.
__global__ void launch_child(DeviceExecutable child, bool tail, int* status) {
  *status = tail ? device::launch_after(child) : device::launch(child);
}

// Spins ~`ns` nanoseconds, then writes `value`: a late write a tail launch must still see.
__global__ void late_write(int* flag, int value, unsigned ns) {
  for (unsigned spent = 0; spent < ns; spent += 1000) __nanosleep(1000);
  *flag = value;
}

__global__ void copy_int(const int* from, int* to) { *to = *from; }

// One step of a loop the device drives: counts, and launches its own graph again until
// `limit` steps ran; the first refusal in *status.
__global__ void step(int* counter, int limit, int* status) {
  if (++*counter < limit) {
    const cudaError_t s = device::launch_again();
    if (s != cudaSuccess && *status == 0) *status = s;
  }
}

constexpr int n = 4096;
constexpr LaunchConfig cover{{n / 256}, {256}};

// A parent executable: one kernel launching `child`; its status word in `status`. Itself
// launchable from the device when `device_launch`.
Executable launcher(const Device& gpu, DeviceExecutable child, bool tail, Buffer<int>& status,
                    bool device_launch = false) {
  CommandBuffer cmd("parent");
  cmd.launch(&launch_child, LaunchConfig{{1}, {1}}, child, tail, status.data()).named("launch");
  return compile(cmd, gpu, {.device_launch = device_launch});
}

}  // namespace

TEST_CASE("cuda.device_launch.a_kernel_launches_an_executable_beside_it" *
          doctest::timeout(120)) {
  const Device gpu = Device::cuda(0);
  Buffer<int> out(gpu, n), status(gpu, 1);
  CommandBuffer cmd("child");
  cmd.launch(&set_all, cover, out.data(), n, 7);
  Executable child = compile(cmd, gpu, {.device_launch = true});
  CHECK(child.backend() == Backend::cuda_graph);
  Queue q(gpu);
  const DeviceExecutable handle = child.device_executable(q);
  REQUIRE(handle);
  // The launching graph may be launchable from the device itself, or not.
  for (bool parent_on_device : {false, true}) {
    CAPTURE(parent_on_device);
    Executable parent = launcher(gpu, handle, false, status, parent_on_device);
    for (int run = 0; run < 3; ++run) {
      poison(out);
      poison(status);
      // The parent's launch ends once what it launched beside it has ended.
      parent.launch(q).wait();
      CHECK(read_ints(status) == std::vector<int>{cudaSuccess});
      REQUIRE(read_ints(out) == std::vector<int>(n, 7));
    }
  }
  // The child is launched from the host as well.
  poison(out);
  child.launch(q).wait();
  CHECK(read_ints(out) == std::vector<int>(n, 7));
}

namespace {

// Launches `child` beside the calling graph twice in a row: CUDA's answers in status[0..1].
__global__ void launch_child_twice(DeviceExecutable child, int* status) {
  status[0] = device::launch(child);
  status[1] = device::launch(child);
}

__global__ void count_run(int* runs) { atomicAdd(runs, 1); }

}  // namespace

TEST_CASE("cuda.device_launch.a_graph_launched_already_is_refused" * doctest::timeout(120)) {
  const Device gpu = Device::cuda(0);
  Buffer<int> runs(gpu, 1), status(gpu, 2);
  CommandBuffer cmd("child");
  cmd.launch(&count_run, LaunchConfig{{1}, {1}}, runs.data());
  Executable child = compile(cmd, gpu, {.device_launch = true});
  Queue q(gpu);
  CommandBuffer p("parent");
  p.launch(&launch_child_twice, LaunchConfig{{1}, {1}}, child.device_executable(q),
           status.data());
  Executable parent = compile(p, gpu);
  write_ints(runs, {0});
  poison(status);
  parent.launch(q).wait();
  const std::vector<int> said = read_ints(status);
  MESSAGE("the second launch: " << said[1] << " ("
                                << std::string(cudaGetErrorString(cudaError_t(said[1]))) << ")");
  CHECK(said[0] == cudaSuccess);
  CHECK(said[1] != cudaSuccess);
  CHECK(read_ints(runs) == std::vector<int>{1});
}

TEST_CASE("cuda.device_launch.a_tail_launch_sees_the_whole_launching_graph" *
          doctest::timeout(120)) {
  const Device gpu = Device::cuda(0);
  Buffer<int> flag(gpu, 1), seen(gpu, 1), status(gpu, 1);
  CommandBuffer cmd("child");
  cmd.launch(&copy_int, LaunchConfig{{1}, {1}}, flag.data(), seen.data());
  Executable child = compile(cmd, gpu, {.device_launch = true});
  Queue q(gpu);
  CommandBuffer p("parent");
  auto go = p.launch(&launch_child, LaunchConfig{{1}, {1}}, child.device_executable(q), true,
                     status.data());
  // Written 200 us after the launch was asked for, by a kernel after the launching one.
  auto write = p.launch(&late_write, LaunchConfig{{1}, {1}}, flag.data(), 1, 200'000u).after(go);
  Executable parent = compile(p, gpu);
  for (int value = 1; value <= 3; ++value) {
    parent.update(write, flag.data(), value, 200'000u);
    poison(flag);
    poison(seen);
    parent.launch(q).wait();
    CHECK(read_ints(status) == std::vector<int>{cudaSuccess});
    CHECK(read_ints(seen) == std::vector<int>{value});
  }
}

TEST_CASE("cuda.device_launch.a_loop_the_device_drives" * doctest::timeout(120)) {
  const Device gpu = Device::cuda(0);
  Buffer<int> counter(gpu, 1), status(gpu, 1), launched(gpu, 1);
  constexpr int steps = 50;
  CommandBuffer cmd("loop");
  cmd.launch(&step, LaunchConfig{{1}, {1}}, counter.data(), steps, status.data());
  Executable loop = compile(cmd, gpu, {.device_launch = true});
  Queue q(gpu);
  Executable parent = launcher(gpu, loop.device_executable(q), false, launched);
  for (int run = 0; run < 2; ++run) {
    write_ints(counter, {0});
    write_ints(status, {0});
    poison(launched);
    // Every step the loop launched ends before the parent's launch does.
    parent.launch(q).wait();
    CHECK(read_ints(launched) == std::vector<int>{cudaSuccess});
    CHECK(read_ints(status) == std::vector<int>{cudaSuccess});
    CHECK(read_ints(counter) == std::vector<int>{steps});
  }
}

TEST_CASE("cuda.device_launch.updates_reach_the_device_through_device_executable" *
          doctest::timeout(120)) {
  const Device gpu = Device::cuda(0);
  Buffer<int> out(gpu, n), status(gpu, 1);
  CommandBuffer cmd("child");
  auto set = cmd.launch(&set_all, cover, out.data(), n, 1);
  Executable child = compile(cmd, gpu, {.device_launch = true});
  Queue q(gpu);
  const DeviceExecutable first = child.device_executable(q);
  CommandBuffer p("parent");
  auto go = p.launch(&launch_child, LaunchConfig{{1}, {1}}, first, false, status.data());
  Executable parent = compile(p, gpu);
  parent.launch(q).wait();
  CHECK(read_ints(out) == std::vector<int>(n, 1));

  // In place: the same graph, uploaded again.
  child.update(set, out.data(), n, 2);
  CHECK(child.device_executable(q) == first);
  poison(out);
  parent.launch(q).wait();
  CHECK(read_ints(out) == std::vector<int>(n, 2));

  // Rebuilt: another graph, which the parent is told of.
  CommandBuffer again("child");
  auto set3 = again.launch(&set_all, cover, out.data(), n, 3);
  again.launch(&add_one, cover, out.data(), n).after(set3);
  const UpdateResult result = child.update(again, {.reinstantiate_if_needed = true});
  CHECK(result.reinstantiated);
  const DeviceExecutable rebuilt = child.device_executable(q);
  parent.update(go, rebuilt, false, status.data());
  poison(out);
  parent.launch(q).wait();
  CHECK(read_ints(status) == std::vector<int>{cudaSuccess});
  CHECK(read_ints(out) == std::vector<int>(n, 4));
}

TEST_CASE("cuda.device_launch.refusals_name_the_command" * doctest::timeout(120)) {
  const Device gpu = Device::cuda(0);
  Buffer<int> out(gpu, n);
  CommandBuffer cmd("child");
  auto set = cmd.launch(&set_all, cover, out.data(), n, 1).named("set");
  cmd.host([] {}).after(set).named("tick");
  auto e = CMDGRAPH_EXPECT_ERROR(compile(cmd, gpu, {.device_launch = true}), errc::unsupported);
  REQUIRE(e);
  CHECK(e->commands() == std::vector<std::string>{"tick"});
  CHECK(std::string(e->what()).find("a host command cannot be in a graph launched from the "
                                    "device") != std::string::npos);

  CommandBuffer kernels("kernels");
  kernels.launch(&set_all, cover, out.data(), n, 1);
  auto s = CMDGRAPH_EXPECT_ERROR(
      compile(kernels, gpu, {.backend = Backend::streams, .device_launch = true}),
      errc::unsupported);
  REQUIRE(s);
  CHECK(std::string(s->what()).find("needs the cuda_graph backend") != std::string::npos);
  CMDGRAPH_EXPECT_ERROR(compile(kernels, gpu, {.profile = true, .device_launch = true}),
                        errc::unsupported);
  Queue q(gpu);
  for (Backend backend : {Backend::cuda_graph, Backend::streams}) {
    Executable plain = compile(kernels, gpu, {.backend = backend});
    CMDGRAPH_EXPECT_ERROR(plain.device_executable(q), errc::wrong_state);
  }

  // An update may not bring in what the graph cannot hold.
  Executable child = compile(kernels, gpu, {.device_launch = true});
  CommandBuffer more("kernels");
  auto k = more.launch(&set_all, cover, out.data(), n, 1);
  more.host([] {}).after(k).named("late");
  auto u = CMDGRAPH_EXPECT_ERROR(child.update(more, {.reinstantiate_if_needed = true}),
                                 errc::unsupported);
  REQUIRE(u);
  CHECK(u->commands() == std::vector<std::string>{"late"});
}

namespace {

// Counts the blocks that ran (thread 0 of each).
__global__ void count_blocks(int* blocks) {
  if (threadIdx.x == 0) atomicAdd(blocks, 1);
}
__global__ void write_grid(DispatchSize* grid, unsigned x) { *grid = {x, 1, 1}; }

struct Increment {  // one item: one more
  int* counter;
  __host__ __device__ void operator()(std::size_t) const { *counter += 1; }
};
struct AddOne {
  int* out;
  __host__ __device__ void operator()(std::size_t i) const { out[i] += 1; }
};
struct Below {
  const int* counter;
  int limit;
  __host__ __device__ bool operator()() const { return *counter < limit; }
};

// Compiles `cmd` for device launch, launches it from a kernel and waits; false (with the
// reason) when compile() refused it.
bool launched_from_device(CommandBuffer& cmd) {
  const Device gpu = Device::cuda(0);
  Executable child;
  try {
    child = compile(cmd, gpu, {.device_launch = true});
  } catch (const Error& e) {
    MESSAGE(e.what());
    return false;
  }
  Queue q(gpu);
  Buffer<int> status(gpu, 1);
  poison(status);
  Executable parent = launcher(gpu, child.device_executable(q), false, status);
  parent.launch(q).wait();
  CHECK(read_ints(status) == std::vector<int>{cudaSuccess});
  return true;
}

// compile() refuses `cmd` for device launch, naming `command`, before CUDA is asked.
void refused_naming(CommandBuffer& cmd, const std::string& command) {
  auto e = CMDGRAPH_EXPECT_ERROR(compile(cmd, Device::cuda(0), {.device_launch = true}),
                                 errc::unsupported);
  REQUIRE(e);
  CHECK(e->commands() == std::vector<std::string>{command});
  CHECK(std::string(e->what()).find("cannot be in a graph launched from the device") !=
        std::string::npos);
}

}  // namespace

// What a device graph holds beyond kernels, as the H100 showed: fills, copies, executed
// buffers, programmatic edges and indirect commands run when launched from the device;
// barriers (empty nodes) and conditional commands (conditional nodes) CUDA refuses, and so
// compile() does first, naming them.
TEST_CASE("cuda.device_launch.what_a_device_graph_holds" * doctest::timeout(120)) {
  const Device gpu = Device::cuda(0);
  Buffer<int> a(gpu, n), b(gpu, n), counter(gpu, 1);
  {
    poison(a);
    CommandBuffer cmd("fill");
    cmd.fill(a, 7, n);
    REQUIRE(launched_from_device(cmd));
    CHECK(read_ints(a) == std::vector<int>(n, 7));
  }
  {
    write_ints(a, std::vector<int>(n, 5));
    poison(b);
    CommandBuffer cmd("copy");
    cmd.copy(b, a, n);
    REQUIRE(launched_from_device(cmd));
    CHECK(read_ints(b) == std::vector<int>(n, 5));
  }
  {
    poison(a);
    CommandBuffer body("body");
    auto set = body.launch(&set_all, cover, a.data(), n, 9);
    body.parallel_for(n, AddOne{a.data()}).after(set);
    CommandBuffer cmd("execute");
    cmd.execute(body);
    REQUIRE(launched_from_device(cmd));
    CHECK(read_ints(a) == std::vector<int>(n, 10));
  }
  {
    poison(a);
    CommandBuffer cmd("programmatic");
    auto first = cmd.launch(&set_all, cover, a.data(), n, 1);
    cmd.parallel_for(n, AddOne{a.data()}).after(first, EdgeKind::programmatic);
    REQUIRE(launched_from_device(cmd));
    CHECK(read_ints(a) == std::vector<int>(n, 2));
  }
  {
    Buffer<int> blocks(gpu, 1);
    Buffer<DispatchSize> grid(gpu, 1);
    write_ints(blocks, {0});
    CommandBuffer cmd("indirect");
    auto size = cmd.launch(&write_grid, LaunchConfig{{1}, {1}}, grid.data(), 3u);
    cmd.launch_indirect(&count_blocks, grid, LaunchConfig{{8}, {32}}, blocks.data()).after(size);
    REQUIRE(launched_from_device(cmd));
    CHECK(read_ints(blocks) == std::vector<int>{3});
  }
  {
    // In an executed buffer: the bodies are asked too.
    CommandBuffer inner("inner");
    auto first = inner.launch(&set_all, cover, a.data(), n, 1);
    auto join = inner.barrier().after(first).named("join");
    inner.launch(&add_one, cover, a.data(), n).after(join);
    CommandBuffer cmd("barrier");
    cmd.execute(inner);
    refused_naming(cmd, "inner/join");
  }
  {
    CommandBuffer body("body");
    body.parallel_for(1, Increment{counter.data()});
    CommandBuffer cmd("loop");
    cmd.loop_while(body, Below{counter.data(), 5}).named("loop");
    refused_naming(cmd, "loop");
  }
  {
    CommandBuffer body("body");
    body.launch(&add_one, cover, a.data(), n);
    CommandBuffer cmd("if");
    cmd.if_then(Below{counter.data(), 5}, body).named("if");
    refused_naming(cmd, "if");
  }
}
