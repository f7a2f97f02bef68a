// Collectives on one GPU (single-rank communicators): every command and element type on both
// CUDA backends against host results, ordering around collectives (ticket oracle), updates in
// place, refusals, communicators from an id and views. Failures and lifetimes are in
// test_cuda_nccl_faults.cu.
#include "cuda/nccl_support.cuh"
#include "support/child_process.hpp"
#include "support/expect_error.hpp"
#include "support/random_dag.hpp"

#include <doctest/doctest.h>
#include <nccl.h>

#include <cmath>
#include <string>

using namespace cmdgraph;
using namespace cmdgraph::testing;

namespace {

template <class T>
void every_collective(Backend backend, const Communicator& comm, ReduceOp op) {
  const Device gpu = comm.device();
  EveryCollective<T> data(gpu, 1000, 0, 1, op);
  CommandBuffer cmd("every collective");
  data.record(cmd, comm);
  Executable exe = compile(cmd, gpu, {.backend = backend});
  REQUIRE(exe.backend() == backend);
  Queue q(gpu);
  for (int k = 0; k < 3; ++k) exe.launch(q);
  q.wait();
  const std::string wrong = data.check(3);
  CHECK_MESSAGE(wrong.empty(), wrong);
}

struct Never {
  __host__ __device__ bool operator()() const { return false; }
};

// Takes tickets like the ordering oracle's vertices and writes what the collective reads.
struct Produce {
  Ticket ticket;
  float* send;
  __host__ __device__ void operator()(std::size_t i) const {
    ticket(i);
    send[i] = static_cast<float>(i % 29 + 1);
  }
};
// Takes tickets and copies out what the collective wrote.
struct Consume {
  Ticket ticket;
  const float* recv;
  float* out;
  __host__ __device__ void operator()(std::size_t i) const {
    ticket(i);
    out[i] = recv[i];
  }
};

}  // namespace

TEST_CASE("cuda.nccl.every_collective_on_both_backends" * doctest::timeout(300)) {
  const Communicator comm = single_rank(Device::cuda(0));
  CHECK(comm.rank() == 0);
  CHECK(comm.size() == 1);
  CHECK(comm.device() == Device::cuda(0));
  CHECK(comm.native_handle() != nullptr);
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    SUBCASE("float") { every_collective<float>(backend, comm, ReduceOp::sum); }
    SUBCASE("double, product") { every_collective<double>(backend, comm, ReduceOp::product); }
    SUBCASE("int32, min") { every_collective<std::int32_t>(backend, comm, ReduceOp::min); }
    SUBCASE("int64") { every_collective<std::int64_t>(backend, comm, ReduceOp::sum); }
    SUBCASE("uint8, max") { every_collective<std::uint8_t>(backend, comm, ReduceOp::max); }
    SUBCASE("half, average") { every_collective<__half>(backend, comm, ReduceOp::average); }
  }
}

TEST_CASE("cuda.nccl.orders_around_collectives" * doctest::timeout(300)) {
  const Device gpu = Device::cuda(0);
  const Communicator comm = single_rank(gpu);
  constexpr std::size_t n = 4096;
  constexpr std::uint32_t launches = 4;
  Buffer<float> send(gpu, n), recv(gpu, n), out(gpu, n);
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    for (std::uint32_t seed = 1; seed <= 3; ++seed) {
      CAPTURE(seed);
      // A random DAG of tickets; vertex 3 produces what the collective reads, vertex 12
      // consumes what it writes: the collective sits between them, so the oracle checks the
      // edge 3 -> 12 through it, and `out` shows the collective ran between them every launch
      // (a fill clears `recv` first).
      Dag dag = random_dag(DagShape::random, 16, seed);
      const std::uint32_t producer = 3, consumer = 12;
      std::vector<std::uint32_t> elements(dag.size, 1);
      elements[producer] = elements[consumer] = static_cast<std::uint32_t>(n);
      std::uint32_t per_launch = 0;
      for (auto e : elements) per_launch += e;
      DeviceBoard board(gpu, dag.size * launches);
      const TicketBoard tickets = board.board(static_cast<std::uint32_t>(dag.size), per_launch,
                                              launches);
      poison(out.view());
      CommandBuffer cmd("around");
      std::vector<Command> c;
      for (std::uint32_t v = 0; v < dag.size; ++v) {
        const Ticket t{tickets, v};
        if (v == producer) {
          c.push_back(cmd.parallel_for(n, Produce{t, send.data()}));
        } else if (v == consumer) {
          c.push_back(cmd.parallel_for(n, Consume{t, recv.data(), out.data()}));
        } else {
          c.push_back(cmd.parallel_for(1, t));
        }
      }
      for (const auto& [p, k] : dag.edges) c[k].after(c[p]);
      auto clear = cmd.fill(recv, 0.0f, n).named("clear");
      auto sum = cmd.all_reduce(comm, send, recv, n).named("sum").after(c[producer], clear);
      c[consumer].after(sum);
      dag.edges.emplace_back(producer, consumer);
      Executable exe = compile(cmd, gpu, {.backend = backend});
      Queue q(gpu);
      for (std::uint32_t k = 0; k < launches; ++k) exe.launch(q);
      q.wait();
      const std::string wrong = check_order(dag, board.read(), launches, elements);
      CHECK_MESSAGE(wrong.empty(), wrong);
      const std::vector<float> got = download(out.view(), n);
      for (std::size_t i = 0; i < n; ++i) {
        if (got[i] != static_cast<float>(i % 29 + 1)) {
          FAIL_CHECK("out[" << i << "] = " << got[i]);
          break;
        }
      }
    }
  }
}

TEST_CASE("cuda.nccl.update_in_place" * doctest::timeout(120)) {
  const Device gpu = Device::cuda(0);
  const Communicator comm = single_rank(gpu);
  constexpr std::size_t n = 2048;
  Buffer<float> a(gpu, n), b(gpu, n), c(gpu, n), d(gpu, n);
  const std::vector<float> from_a = input<float>(n, 1), from_c = input<float>(n, 2);
  upload(a.view(), from_a);
  upload(c.view(), from_c);
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    poison(b.view());
    poison(d.view());
    CommandBuffer cmd("update");
    auto sum = cmd.all_reduce(comm, a, b, n).named("sum");
    Executable exe = compile(cmd, gpu, {.backend = backend});
    Queue q(gpu);
    exe.launch(q).wait();
    CHECK(download(b.view(), n) == from_a);

    SUBCASE("new buffers and count through the handle") {
      poison(b.view());
      exe.update(sum, c, d, n);
      exe.launch(q).wait();
      CHECK(download(d.view(), n) == from_c);
      CHECK(std::isnan(download(b.view(), 1)[0]));  // the old destination is left alone
      exe.update(sum, a.subview(0, n / 2), d, n / 2);
      exe.launch(q).wait();
      const std::vector<float> got = download(d.view(), n);
      CHECK(std::equal(got.begin(), got.begin() + n / 2, from_a.begin()));
      CHECK(std::equal(got.begin() + n / 2, got.end(), from_c.begin() + n / 2));
    }
    SUBCASE("a re-recorded buffer") {
      CommandBuffer again("update");
      again.all_reduce(comm, c, d, n).named("sum");
      const UpdateResult r = exe.update(again);
      CHECK_FALSE(r.reinstantiated);
      exe.launch(q).wait();
      CHECK(download(d.view(), n) == from_c);
    }
    SUBCASE("bad values are refused and change nothing") {
      auto e = CMDGRAPH_EXPECT_ERROR(exe.update(sum, a, d.subview(0, 8), n),
                                     errc::invalid_argument);
      REQUIRE(e);
      CHECK(e->commands() == std::vector<std::string>{"sum"});
      poison(b.view());
      exe.launch(q).wait();
      CHECK(download(b.view(), n) == from_a);
    }
  }
}

TEST_CASE("cuda.nccl.refusals" * doctest::timeout(60)) {
  const Device gpu = Device::cuda(0);
  const Communicator comm = single_rank(gpu);
  Buffer<float> a(gpu, 64), b(gpu, 64);
  CommandBuffer cmd("refused");
  auto e = CMDGRAPH_EXPECT_ERROR(cmd.all_reduce(comm, a, b, 65), errc::invalid_argument);
  REQUIRE(e);
  CHECK(e->commands() == std::vector<std::string>{"collective#0"});
  CHECK(testing::mentions(*e, "source holds 64 elements (256 bytes), the command needs 65"));
  e = CMDGRAPH_EXPECT_ERROR(cmd.all_gather(comm, a, b.subview(0, 32), 64), errc::invalid_argument);
  REQUIRE(e);
  CHECK(testing::mentions(*e, "destination holds 32 elements"));
  // Memory of a device the communicator's rank is not on (it need not exist to be refused).
  const View<float> elsewhere(a.data(), 64, MemorySpace::device, gpu.ordinal() + 1);
  e = CMDGRAPH_EXPECT_ERROR(cmd.all_reduce(comm, elsewhere, b, 64), errc::invalid_argument);
  REQUIRE(e);
  CHECK(testing::mentions(*e, "memory of cuda:" + std::to_string(gpu.ordinal() + 1)));
  HostBuffer<float> pinned(64);
  e = CMDGRAPH_EXPECT_ERROR(cmd.all_reduce(comm, a, pinned, 64), errc::invalid_argument);
  REQUIRE(e);
  CHECK(testing::mentions(*e, "host memory"));
  CHECK(cmd.size() == 0);

  cmd.all_reduce(comm, a, b, 64).named("sum");
  e = CMDGRAPH_EXPECT_ERROR(compile(cmd, Device::host()), errc::unsupported);
  REQUIRE(e);
  CHECK(e->commands() == std::vector<std::string>{"sum"});
  // A loop body on CUDA is a conditional node's body graph: no collective there.
  CommandBuffer body("body"), outer("outer");
  body.all_reduce(comm, a, b, 64).named("inner");
  outer.loop_while(body, Never{});
  e = CMDGRAPH_EXPECT_ERROR(compile(outer, gpu, {.backend = Backend::cuda_graph}),
                            errc::unsupported);
  REQUIRE(e);
  CHECK(e->commands() == std::vector<std::string>{"body/inner"});
}

TEST_CASE("cuda.nccl.communicators_from_an_id_and_views" * doctest::timeout(120)) {
  const Device gpu = Device::cuda(0);
  constexpr std::size_t n = 1000;
  Buffer<float> a(gpu, n), b(gpu, n);
  const std::vector<float> want = input<float>(n, 5);
  upload(a.view(), want);
  auto runs = [&](const Communicator& comm) {
    poison(b.view());
    CommandBuffer cmd("sum");
    cmd.all_reduce(comm, a, b, n);
    Executable exe = compile(cmd, gpu);
    Queue q(gpu);
    exe.launch(q).wait();
    CHECK(download(b.view(), n) == want);
  };
  SUBCASE("one rank of an id") {
    const Communicator comm(gpu, Communicator::unique_id(), 0, 1);
    CHECK(comm.rank() == 0);
    CHECK(comm.size() == 1);
    runs(comm);
  }
  SUBCASE("a view of a communicator the caller owns") {
    ncclComm_t raw = nullptr;
    const int device = gpu.ordinal();
    REQUIRE(ncclCommInitAll(&raw, 1, &device) == ncclSuccess);
    {
      const Communicator view = Communicator::view(raw);
      CHECK(view.native_handle() == raw);
      CHECK(view.device() == gpu);
      runs(view);
    }
    // The view let go without destroying it: it is the caller's to destroy.
    CHECK(ncclCommDestroy(raw) == ncclSuccess);
  }
  SUBCASE("bad requests") {
    CHECK(CMDGRAPH_EXPECT_ERROR(Communicator::view(nullptr), errc::invalid_argument).has_value());
    const std::span<const Device> none;
    CHECK(CMDGRAPH_EXPECT_ERROR(Communicator::all(none), errc::invalid_argument).has_value());
    const Device host[] = {Device::host()}, twice[] = {gpu, gpu};
    CHECK(CMDGRAPH_EXPECT_ERROR(Communicator::all(host), errc::invalid_argument).has_value());
    CHECK(CMDGRAPH_EXPECT_ERROR(Communicator::all(twice), errc::invalid_argument).has_value());
    const CommunicatorId id;
    CHECK(CMDGRAPH_EXPECT_ERROR(Communicator(gpu, id, 1, 1), errc::invalid_argument).has_value());
    const Communicator empty;
    CHECK_FALSE(empty);
    CHECK(CMDGRAPH_EXPECT_ERROR((void)empty.rank(), errc::invalid_handle).has_value());
  }
}

// Run in a process of its own by the next test, with CMDGRAPH_NCCL_LIBRARY naming no file:
// libcmdgraph loads libnccl when a communicator is first made, so making one is refused saying
// which library could not be loaded and from where, and nothing else changes. (This process
// links libnccl itself; the variable still decides what cmdgraph loads.)
TEST_CASE("cuda.nccl.child_library_missing" * doctest::timeout(60)) {
  if (!in_child("CMDGRAPH_TEST_NCCL_CHILD")) return;  // only in its own process
  const Device gpu = Device::cuda(0);
  const Device devices[] = {gpu};
  for (auto e : {CMDGRAPH_EXPECT_ERROR(Communicator::all(devices), errc::unsupported),
                 CMDGRAPH_EXPECT_ERROR(Communicator::unique_id(), errc::unsupported)}) {
    REQUIRE(e);
    MESSAGE("refused: " << e->what());
    CHECK(std::string(e->what()).find("NCCL (libnccl) could not be loaded") != std::string::npos);
    CHECK(std::string(e->what()).find("/nonexistent/libnccl.so.2") != std::string::npos);
    CHECK(std::string(e->what()).find("CMDGRAPH_NCCL_LIBRARY") != std::string::npos);
  }
  // The rest of the library works as before.
  Buffer<int> d(gpu, 1);
  CommandBuffer cmd("no_nccl");
  cmd.fill(d, 7, 1);
  Queue q(gpu);
  compile(cmd, gpu).launch(q).wait();
  CHECK(download(d.view(), 1) == std::vector<int>{7});
}

TEST_CASE("cuda.nccl.missing_library_is_an_error_that_says_where" * doctest::timeout(120)) {
  if (in_child("CMDGRAPH_TEST_NCCL_CHILD")) return;
  run_child("CMDGRAPH_TEST_NCCL_CHILD", "cuda.nccl.child_library_missing",
            "CMDGRAPH_NCCL_LIBRARY=/nonexistent/libnccl.so.2");
}
