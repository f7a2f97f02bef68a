// Collectives across GPUs: one communicator over every visible GPU (ncclCommInitAll), one rank
// per GPU, each rank recording, compiling and launching its own buffer from its own host thread
// as NCCL asks of a process that drives several GPUs; every rank's results against a host
// reduction of every rank's input, on both CUDA backends. Also a collective compiled for a
// device that is not its rank's, and a rank whose peer never launches, ended by the timeout.
// Needs 2 GPUs (exits 77, skipped, with fewer).
#include "cuda/nccl_support.cuh"
#include "support/expect_error.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <exception>
#include <thread>

using namespace cmdgraph;
using namespace cmdgraph::testing;
using namespace std::chrono_literals;

namespace {

// Runs `rank_body(rank)` on one thread per rank and rethrows the first exception.
template <class F>
void on_every_rank(int ranks, F rank_body) {
  std::vector<std::exception_ptr> errors(ranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      try {
        rank_body(r);
      } catch (...) {
        errors[r] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

template <class T>
void every_collective(Backend backend, std::vector<Communicator>& comms, ReduceOp op,
                      int launches) {
  const int ranks = static_cast<int>(comms.size());
  std::vector<std::string> wrong(ranks);
  on_every_rank(ranks, [&](int r) {
    const Device gpu = comms[r].device();
    EveryCollective<T> data(gpu, 1000, r, ranks, op);
    CommandBuffer cmd("rank " + std::to_string(r));
    data.record(cmd, comms[r]);
    Executable exe = compile(cmd, gpu, {.backend = backend});
    Queue q(gpu);
    for (int k = 0; k < launches; ++k) exe.launch(q);
    q.wait();
    wrong[r] = data.check(launches);
  });
  for (int r = 0; r < ranks; ++r) CHECK_MESSAGE(wrong[r].empty(), "rank " << r << ": " << wrong[r]);
}

}  // namespace

TEST_CASE("cuda.nccl.multi.every_collective_against_the_host" * doctest::timeout(600)) {
  const std::vector<Device> gpus = first_gpus(Device::count());
  std::vector<Communicator> comms = Communicator::all(gpus);
  REQUIRE(comms.size() == gpus.size());
  for (std::size_t r = 0; r < comms.size(); ++r) {
    CHECK(comms[r].rank() == static_cast<int>(r));
    CHECK(comms[r].size() == static_cast<int>(gpus.size()));
    CHECK(comms[r].device() == gpus[r]);
  }
  MESSAGE(gpus.size() << " ranks, one per GPU");
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    // Sums grow with every launch of the in-place all_reduce: exact in these types for 3
    // launches; 8- and 16-bit types take max (the same every launch) and average.
    SUBCASE("float, sum") { every_collective<float>(backend, comms, ReduceOp::sum, 3); }
    SUBCASE("double, sum") { every_collective<double>(backend, comms, ReduceOp::sum, 3); }
    SUBCASE("int32, sum") { every_collective<std::int32_t>(backend, comms, ReduceOp::sum, 3); }
    SUBCASE("int64, min") { every_collective<std::int64_t>(backend, comms, ReduceOp::min, 3); }
    SUBCASE("uint8, max") { every_collective<std::uint8_t>(backend, comms, ReduceOp::max, 3); }
    SUBCASE("float, average") { every_collective<float>(backend, comms, ReduceOp::average, 1); }
    SUBCASE("half, max") { every_collective<__half>(backend, comms, ReduceOp::max, 3); }
  }
}

TEST_CASE("cuda.nccl.multi.update_in_place_on_every_rank" * doctest::timeout(300)) {
  const std::vector<Device> gpus = first_gpus(Device::count());
  std::vector<Communicator> comms = Communicator::all(gpus);
  const int ranks = static_cast<int>(comms.size());
  constexpr std::size_t n = 4096;
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    std::vector<std::string> wrong(ranks);
    on_every_rank(ranks, [&](int r) {
      const Device gpu = gpus[r];
      Buffer<float> a(gpu, n), b(gpu, n), c(gpu, n), d(gpu, n);
      upload(a.view(), input<float>(n, r));
      upload(c.view(), input<float>(n, r + ranks));
      poison(d.view());
      CommandBuffer cmd("update");
      auto sum = cmd.all_reduce(comms[r], a, b, n).named("sum");
      Executable exe = compile(cmd, gpu, {.backend = backend});
      Queue q(gpu);
      exe.launch(q).wait();
      exe.update(sum, c, d, n);  // every rank updates alike: capturing is collective
      exe.launch(q).wait();
      std::vector<double> want(n);
      for (int k = 0; k < ranks; ++k) {
        const std::vector<float> from = input<float>(n, k + ranks);
        for (std::size_t i = 0; i < n; ++i) want[i] += from[i];
      }
      wrong[r] = mismatch("updated all_reduce", values(download(d.view(), n)), want);
    });
    for (int r = 0; r < ranks; ++r) {
      CHECK_MESSAGE(wrong[r].empty(), "rank " << r << ": " << wrong[r]);
    }
  }
}

TEST_CASE("cuda.nccl.multi.ranks_joining_one_id" * doctest::timeout(300)) {
  // As separate processes start, one rank per thread here: one id, made once, and every rank
  // joining it with its own constructor call (each blocks until all have joined).
  const std::vector<Device> gpus = first_gpus(Device::count());
  const int ranks = static_cast<int>(gpus.size());
  const CommunicatorId id = Communicator::unique_id();
  constexpr std::size_t n = 1000;
  std::vector<std::string> wrong(ranks);
  on_every_rank(ranks, [&](int r) {
    const Communicator comm(gpus[r], id, r, ranks);
    REQUIRE(comm.rank() == r);
    REQUIRE(comm.size() == ranks);
    Buffer<std::int32_t> a(gpus[r], n), b(gpus[r], n);
    upload(a.view(), input<std::int32_t>(n, r));
    poison(b.view());
    CommandBuffer cmd("sum");
    cmd.all_reduce(comm, a, b, n);
    Executable exe = compile(cmd, gpus[r]);
    Queue q(gpus[r]);
    exe.launch(q).wait();
    std::vector<double> want(n);
    for (int k = 0; k < ranks; ++k) {
      const std::vector<std::int32_t> from = input<std::int32_t>(n, k);
      for (std::size_t i = 0; i < n; ++i) want[i] += from[i];
    }
    wrong[r] = mismatch("all_reduce", values(download(b.view(), n)), want);
  });
  for (int r = 0; r < ranks; ++r) CHECK_MESSAGE(wrong[r].empty(), "rank " << r << ": " << wrong[r]);
}

TEST_CASE("cuda.nccl.multi.compiled_for_another_device" * doctest::timeout(120)) {
  const std::vector<Device> gpus = first_gpus(2);
  std::vector<Communicator> comms = Communicator::all(gpus);
  Buffer<float> a(gpus[1], 64), b(gpus[1], 64);
  CommandBuffer cmd("misplaced");
  cmd.all_reduce(comms[1], a, b, 64).named("sum");
  auto e = CMDGRAPH_EXPECT_ERROR(compile(cmd, gpus[0]), errc::device_mismatch);
  REQUIRE(e);
  CHECK(e->commands() == std::vector<std::string>{"sum"});
  CHECK(testing::mentions(*e, "rank 1 of 2 on cuda:1"));
}

TEST_CASE("cuda.nccl.multi.missing_peer_ends_in_a_timeout" * doctest::timeout(120)) {
  // Rank 0 launches an all_reduce that rank 1 never joins: its kernel waits on the GPU for a
  // peer that never comes. The wait gives up after the timeout and aborts the communicator,
  // whose kernel then ends, so the wait returns (with Error(timeout)) instead of hanging.
  const std::vector<Device> gpus = first_gpus(2);
  constexpr std::size_t n = 1 << 20;
  std::vector<Communicator> comms = Communicator::all(gpus, {.timeout = 500ms});
  Buffer<float> a(gpus[0], n), b(gpus[0], n);
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    if (comms[0].aborted()) comms = Communicator::all(gpus, {.timeout = 500ms});
    // NCCL connects ranks at their first collectives, every rank taking part (on the host): run
    // one together first, so that the lone rank below waits on the GPU, not in its compile.
    on_every_rank(2, [&](int r) {
      Buffer<float> x(gpus[r], n), y(gpus[r], n);
      CommandBuffer warm("together");
      warm.all_reduce(comms[r], x, y, n);
      Executable exe = compile(warm, gpus[r], {.backend = backend});
      Queue q(gpus[r]);
      exe.launch(q).wait();
    });
    CommandBuffer cmd("alone");
    cmd.all_reduce(comms[0], a, b, n).named("sum");
    Executable exe = compile(cmd, gpus[0], {.backend = backend});
    Queue q(gpus[0]);
    const auto started = std::chrono::steady_clock::now();
    auto e = CMDGRAPH_EXPECT_ERROR(exe.launch(q).wait(), errc::timeout);
    REQUIRE(e);
    CHECK(e->commands() == std::vector<std::string>{"sum"});
    CHECK(comms[0].aborted());
    CHECK_FALSE(comms[1].aborted());
    MESSAGE(std::string(to_string(backend)) << ": the wait gave up after "
                               << std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                                                started).count()
                               << " s");
  }
}
