// Collectives when things go wrong, on one GPU: a communicator let go while its launch runs, a
// timeout and a failed peer that abort the communicator (through a wait, a queue wait or a
// destructor), and every CUDA and NCCL call of a compile-launch-update sequence failed in turn.
#include "cuda/fault_injection.hpp"
#include "cuda/handles.hpp"
#include "cuda/nccl_support.cuh"
#include "support/expect_error.hpp"

#include <doctest/doctest.h>
#include <nccl.h>

#include <chrono>
#include <memory>
#include <optional>
#include <set>
#include <thread>

using namespace cmdgraph;
using namespace cmdgraph::testing;
using namespace std::chrono_literals;

namespace {

// A launch that cannot finish on its own: an all_reduce ("sum") and after it a kernel ("hold")
// spinning until the host releases `flag` (a stand-in, on one GPU, for a collective whose peer
// never comes).
Executable held_after_collective(const Communicator& comm, Backend backend, Buffer<float>& a,
                                 Buffer<float>& b, int* flag) {
  CommandBuffer cmd("held");
  auto sum = cmd.all_reduce(comm, a, b, a.size()).named("sum");
  cmd.launch(&spin_until, LaunchConfig{{1}, {1}}, flag).named("hold").after(sum);
  return compile(cmd, comm.device(), {.backend = backend});
}

// Releases `flag` once `comm` has been aborted (or after a minute, so that nothing hangs).
std::thread release_when_aborted(const Communicator& comm, int* flag) {
  return std::thread([&comm, flag] {
    for (int i = 0; i < 6000 && !comm.aborted(); ++i) std::this_thread::sleep_for(10ms);
    reinterpret_cast<volatile int*>(flag)[0] = 1;
  });
}

// A held launch (held_after_collective) on a queue of its own, and the wait that ends it.
struct HeldCollective {
  Executable exe;
  Queue q;
  Fence f;
  HeldCollective(const Communicator& comm, Backend backend, Buffer<float>& a, Buffer<float>& b,
                 int* flag)
      : exe(held_after_collective(comm, backend, a, b, flag)), q(comm.device()),
        f(exe.launch(q)) {}
  // What waiting on the queue or the fence throws (Error(`code`) expected), the launch
  // released once the communicator is aborted.
  std::optional<Error> wait_aborted(const Communicator& comm, int* flag, bool queue_wait,
                                    errc code) {
    std::thread releaser = release_when_aborted(comm, flag);
    auto e = queue_wait ? CMDGRAPH_EXPECT_ERROR(q.wait(), code)
                        : CMDGRAPH_EXPECT_ERROR(f.wait(), code);
    releaser.join();
    return e;
  }
};

}  // namespace

TEST_CASE("cuda.nccl.communicator_let_go_while_in_flight" * doctest::timeout(120)) {
  const Device gpu = Device::cuda(0);
  constexpr std::size_t n = 1 << 16;
  Buffer<float> a(gpu, n), b(gpu, n);
  const std::vector<float> want = input<float>(n, 3);
  upload(a.view(), want);
  HostBuffer<int> flag(1);
  auto release_later = [&] {
    return std::thread([&] {
      std::this_thread::sleep_for(50ms);
      reinterpret_cast<volatile int*>(flag.data())[0] = 1;
    });
  };
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    flag[0] = 0;
    poison(b.view());
    Queue q(gpu);
    SUBCASE("the communicator, then the executable") {
      auto comm = std::make_unique<Communicator>(single_rank(gpu));
      CommandBuffer cmd("held");
      auto spin = cmd.launch(&spin_until, LaunchConfig{{1}, {1}}, flag.data()).named("hold");
      cmd.all_reduce(*comm, a, b, n).named("sum").after(spin);
      Executable exe = compile(cmd, gpu, {.backend = backend});
      Fence f = exe.launch(q);
      cmd.reset();   // the recording's hold on the communicator goes too
      comm.reset();  // the executable still holds it: nothing is destroyed under the GPU
      std::thread releaser = release_later();
      f.wait();
      releaser.join();
      CHECK(download(b.view(), n) == want);
      exe.launch(q).wait();  // and it still works
    }  // the executable goes, then the communicator (ncclCommDestroy) after its graph
    SUBCASE("both while the launch runs") {
      Fence f;
      {
        Communicator comm = single_rank(gpu);
        CommandBuffer cmd("held");
        auto spin = cmd.launch(&spin_until, LaunchConfig{{1}, {1}}, flag.data()).named("hold");
        cmd.all_reduce(comm, a, b, n).named("sum").after(spin);
        Executable exe = compile(cmd, gpu, {.backend = backend});
        f = exe.launch(q);
        std::thread releaser = release_later();
        releaser.detach();
      }  // the executable's destructor waits for the launch, then the communicator goes
      CHECK(f.ready());
      f.wait();
      CHECK(download(b.view(), n) == want);
    }
  }
}

TEST_CASE("cuda.nccl.timeout_aborts_the_communicator" * doctest::timeout(120)) {
  // The wait gives up on a held launch after the communicator's timeout, aborts it and
  // throws; then the spin ends.
  const Device gpu = Device::cuda(0);
  Buffer<float> a(gpu, 256), b(gpu, 256);
  HostBuffer<int> flag(1);
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    for (const bool queue_wait : {false, true}) {
      CAPTURE(queue_wait);
      flag[0] = 0;
      Communicator comm = single_rank(gpu, {.timeout = 200ms});
      HeldCollective held(comm, backend, a, b, flag.data());
      auto& [exe, q, f] = held;
      auto e = held.wait_aborted(comm, flag.data(), queue_wait, errc::timeout);
      REQUIRE(e);
      CHECK(e->commands() == std::vector<std::string>{"sum"});
      CHECK_MESSAGE(testing::mentions(*e, "left a launch unfinished past its timeout of 200 ms"),
                    e->what());
      CHECK(comm.aborted());
      CHECK(comm.native_handle() == nullptr);
      // The fence reports the same failure, whichever wait saw it first.
      e = CMDGRAPH_EXPECT_ERROR(f.wait(), errc::timeout);
      // Nothing launches or compiles on an aborted communicator.
      e = CMDGRAPH_EXPECT_ERROR(exe.launch(q), errc::nccl_error);
      REQUIRE(e);
      CHECK(testing::mentions(*e, "cannot launch"));
      CommandBuffer later("later");
      later.all_reduce(comm, a, b, 256).named("again");
      e = CMDGRAPH_EXPECT_ERROR(compile(later, gpu, {.backend = backend}), errc::nccl_error);
      REQUIRE(e);
      CHECK(e->commands() == std::vector<std::string>{"again"});
    }
  }
}

TEST_CASE("cuda.nccl.asynchronous_error_surfaces" * doctest::timeout(120)) {
  // NCCL reports a failed peer through ncclCommGetAsyncError: fault injection makes the next
  // poll report one (ncclRemoteError) while a launch is held on the GPU, as a failed peer
  // would leave it. The wait polls, sees it, aborts the communicator and throws.
  using detail::cuda::FaultInjection;
  const Device gpu = Device::cuda(0);
  Buffer<float> a(gpu, 256), b(gpu, 256);
  HostBuffer<int> flag(1);
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    for (const bool queue_wait : {false, true}) {
      CAPTURE(queue_wait);
      flag[0] = 0;
      Communicator comm = single_rank(gpu);
      HeldCollective held(comm, backend, a, b, flag.data());
      FaultInjection::fail_next_async_poll(ncclRemoteError);
      auto e = held.wait_aborted(comm, flag.data(), queue_wait, errc::nccl_error);
      FaultInjection::fail_next_async_poll(0);
      REQUIRE(e);
      CHECK(e->commands() == std::vector<std::string>{"sum"});
      CHECK(e->cuda_status() == ncclRemoteError);
      CHECK_MESSAGE(testing::mentions(*e, "reported an asynchronous error: ncclRemoteError"),
                    e->what());
      CHECK(comm.aborted());
    }
  }
}

TEST_CASE("cuda.nccl.timeout_ends_a_destructors_wait" * doctest::timeout(120)) {
  // The executable's destructor waits for its launches: it watches the communicator as a wait
  // does, so a launch that cannot finish does not hold it past the timeout.
  const Device gpu = Device::cuda(0);
  Buffer<float> a(gpu, 256), b(gpu, 256);
  HostBuffer<int> flag(1);
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    flag[0] = 0;
    Communicator comm = single_rank(gpu, {.timeout = 200ms});
    Queue q(gpu);
    Fence f;
    std::thread releaser = release_when_aborted(comm, flag.data());
    {
      Executable exe = held_after_collective(comm, backend, a, b, flag.data());
      f = exe.launch(q);
    }  // returns once the timeout aborted the communicator and the launch drained
    releaser.join();
    CHECK(comm.aborted());
    CHECK(f.ready());
    CHECK(CMDGRAPH_EXPECT_ERROR(f.wait(), errc::timeout).has_value());
  }
}

// Every call of a launch of one exchange (a send to itself and the receive) failed in turn: a
// member of the group that fails leaves the others enqueued when the group closes, and a send
// with no receive would wait on the device for ever; the communicator is aborted instead, so
// the device always finishes. Before that, the streams backend hung at the ncclRecv; here the
// communicator's timeout bounds what a hang costs, and an iteration that lasts that long fails.
TEST_CASE("cuda.nccl.a_group_failing_half_way_never_hangs" * doctest::timeout(300)) {
  using detail::cuda::FaultInjection;
  const Device gpu = Device::cuda(0);
  constexpr std::size_t n = 256;
  Buffer<float> a(gpu, n), b(gpu, n);
  upload(a.view(), input<float>(n, 5));
  constexpr auto timeout = 20s;
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    Communicator comm = single_rank(gpu, {.timeout = timeout});
    auto swap_once = [&] {
      CommandBuffer cmd("swap");
      cmd.exchange(comm, {send_to(0, a, n), recv_from(0, b, n)}).named("swap");
      Executable exe = compile(cmd, gpu, {.backend = backend});
      Queue q(gpu);
      exe.launch(q).wait();
    };
    swap_once();  // warm: first-use costs
    FaultInjection::count_calls();
    swap_once();
    const std::uint64_t total = FaultInjection::calls();
    FaultInjection::disarm();
    std::size_t aborted = 0, said = 0;
    for (std::uint64_t k = 1; k <= total; ++k) {
      CAPTURE(k);
      const auto start = std::chrono::steady_clock::now();
      FaultInjection::fail_call(k, cudaErrorMemoryAllocation);
      try {
        swap_once();
      } catch (const Error& e) {
        for (const std::string& name : e.commands()) CHECK(name == "swap");
        // A member refused: the error says the communicator was aborted, and it was.
        if (std::string(e.what()).find("cannot be taken back") != std::string::npos) {
          ++said;
          CHECK(comm.aborted());
        }
      }
      FaultInjection::disarm();
      TEST_CUDA(cudaDeviceSynchronize());
      (void)cudaGetLastError();
      CHECK_MESSAGE(std::chrono::steady_clock::now() - start < timeout,
                    "the device finished only when the communicator's timeout aborted it");
      if (comm.aborted()) {
        ++aborted;
        comm = single_rank(gpu, {.timeout = timeout});
      }
      poison(b.view());
      swap_once();
      CHECK(download(b.view(), n) == download(a.view(), n));
    }
    MESSAGE(std::string(to_string(backend)) << ": " << total << " calls, each failed once; "
                                           << aborted << " aborted the communicator, " << said
                                           << " of them a member of the group refused");
    CHECK(aborted > 0);
    CHECK(said > 0);
  }
}

namespace {

const std::set<std::string> sweep_names = {"ones", "sum", "swap", "scale"};

struct Double {
  float* data;
  __host__ __device__ void operator()(std::size_t i) const { data[i] *= 2.0f; }
};

// Record, compile, launch twice, update the all_reduce's count, launch, destroy.
void collective_sequence(Backend backend, const Communicator& comm, Buffer<float>& a,
                         Buffer<float>& b, Buffer<float>& c) {
  const Device gpu = comm.device();
  const std::size_t n = a.size();
  CommandBuffer cmd("collectives");
  auto ones = cmd.fill(a, 1.0f, n).named("ones");
  auto sum = cmd.all_reduce(comm, a, b, n).named("sum").after(ones);
  auto swap = cmd.exchange(comm, {send_to(0, b, n), recv_from(0, c, n)}).named("swap");
  cmd.parallel_for(n, Double{c.data()}).named("scale").after(swap);
  Executable exe = compile(cmd, gpu, {.backend = backend});
  Queue q(gpu);
  exe.launch(q);
  exe.launch(q).wait();
  exe.update(sum, a, b, n / 2);
  exe.launch(q).wait();
  q.wait();
}

}  // namespace

TEST_CASE("cuda.nccl.every_call_fails_in_turn" * doctest::timeout(600)) {
  using detail::cuda::FaultInjection;
  const Device gpu = Device::cuda(0);
  Buffer<float> a(gpu, 512), b(gpu, 512), c(gpu, 512);
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    Communicator comm = single_rank(gpu);
    collective_sequence(backend, comm, a, b, c);  // warm: first-use costs
    TEST_CUDA(cudaDeviceSynchronize());
    const detail::cuda::LiveCounts baseline = detail::cuda::live_counts();
    FaultInjection::count_calls();
    collective_sequence(backend, comm, a, b, c);
    const std::uint64_t total = FaultInjection::calls();
    FaultInjection::disarm();
    CHECK(download(c.view(), 1)[0] == 2.0f);
    REQUIRE(total > 20);
    // A wait polls its stream until the work is done: how many calls a sequence makes grows
    // with the load on the machine (44 to 88 on the H100 beside other suites), so a call
    // counted in the first sequence may never come in a later one. Only failures that came
    // are weighed.
    std::size_t surfaced = 0, nccl = 0, aborted = 0, fired = 0;
    for (std::uint64_t k = 1; k <= total; ++k) {
      CAPTURE(k);
      FaultInjection::fail_call(k, cudaErrorMemoryAllocation);
      try {
        collective_sequence(backend, comm, a, b, c);
        if (FaultInjection::calls() >= k) ++fired;
      } catch (const Error& e) {
        ++fired;
        ++surfaced;
        if (e.code() == errc::nccl_error) ++nccl;
        // An injected failure of the asynchronous-error poll is a failed peer: the
        // communicator is aborted, and the launches that wait report it.
        CHECK_MESSAGE((e.code() == errc::out_of_memory || e.code() == errc::cuda_error ||
                       e.code() == errc::nccl_error || e.code() == errc::update_refused),
                      std::string(e.what()));
        for (const std::string& name : e.commands()) CHECK_MESSAGE(sweep_names.count(name), name);
      }
      FaultInjection::disarm();
      TEST_CUDA(cudaDeviceSynchronize());
      (void)cudaGetLastError();
      CHECK(detail::cuda::live_counts() == baseline);
      if (comm.aborted()) {
        ++aborted;
        comm = single_rank(gpu);
      }
      // The library works again at once.
      poison(c.view());
      collective_sequence(backend, comm, a, b, c);
      CHECK(download(c.view(), 1)[0] == 2.0f);
    }
    MESSAGE(std::string(to_string(backend))
            << ": " << total << " CUDA and NCCL calls, each failed once; " << fired
            << " failures came, " << surfaced << " surfaced as errors (" << nccl
            << " NCCL errors, " << aborted << " aborted the communicator)");
    CHECK(nccl > 0);
    CHECK(surfaced > fired / 2);
  }
}
