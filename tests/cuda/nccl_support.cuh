// What the NCCL suites share: communicators over GPUs, typed device data from host vectors and
// back, poison, every collective's expected result computed on the host from every rank's
// input, and one rank's recording of all of them.
#pragma once

#include "cuda/kernels.cuh"

#include <cmdgraph/cmdgraph.hpp>

#include <cuda_fp16.h>
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace cmdgraph::testing {

/// The first `count` CUDA devices.
inline std::vector<Device> first_gpus(int count) {
  std::vector<Device> out;
  for (int d = 0; d < count; ++d) out.push_back(Device::cuda(d));
  return out;
}

/// A communicator of one rank on `gpu` (ncclCommInitAll over one device).
inline Communicator single_rank(Device gpu, const CommunicatorOptions& options = {}) {
  const Device devices[] = {gpu};
  std::vector<Communicator> all = Communicator::all(devices, options);
  REQUIRE(all.size() == 1);
  return std::move(all[0]);
}

template <class T>
T element(long v) {
  if constexpr (std::is_same_v<T, __half>) {
    return __float2half(static_cast<float>(v));
  } else {
    return static_cast<T>(v);
  }
}
template <class T>
double value_of(T v) {
  if constexpr (std::is_same_v<T, __half>) {
    return static_cast<double>(__half2float(v));
  } else {
    return static_cast<double>(v);
  }
}

/// Rank `rank`'s input: small integers (1 to 23), exact in every element type, and so are sums
/// of up to 8 ranks.
template <class T>
std::vector<T> input(std::size_t n, int rank) {
  std::vector<T> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    v[i] = element<T>(static_cast<long>((i * 7 + rank * 13) % 23 + 1));
  }
  return v;
}

template <class T>
void upload(View<T> dst, const std::vector<T>& src) {
  REQUIRE(src.size() <= dst.size());
  const OnDevice on(Device::cuda(dst.device_ordinal()));
  TEST_CUDA(cudaMemcpy(dst.data(), src.data(), src.size() * sizeof(T), cudaMemcpyHostToDevice));
  TEST_CUDA(cudaDeviceSynchronize());
}
template <class T>
std::vector<T> download(View<T> src, std::size_t n) {
  std::vector<T> out(n);
  const OnDevice on(Device::cuda(src.device_ordinal()));
  TEST_CUDA(cudaDeviceSynchronize());
  TEST_CUDA(cudaMemcpy(out.data(), src.data(), n * sizeof(T), cudaMemcpyDeviceToHost));
  return out;
}
/// Every byte 0xFF: NaN for floating point, -1 or the maximum for integers, never an input.
template <class T>
void poison(View<T> v) {
  const OnDevice on(Device::cuda(v.device_ordinal()));
  TEST_CUDA(cudaMemset(v.data(), 0xFF, v.size_bytes()));
  TEST_CUDA(cudaDeviceSynchronize());
}

/// `op` over `values` as NCCL computes it (average: the sum divided by the count).
inline double reduce_on_host(ReduceOp op, const std::vector<double>& values) {
  double r = values.front();
  for (std::size_t k = 1; k < values.size(); ++k) {
    const double v = values[k];
    switch (op) {
      case ReduceOp::sum: case ReduceOp::average: r += v; break;
      case ReduceOp::product: r *= v; break;
      case ReduceOp::max: r = std::max(r, v); break;
      case ReduceOp::min: r = std::min(r, v); break;
    }
  }
  return op == ReduceOp::average ? r / static_cast<double>(values.size()) : r;
}

/// The first element of `got` that differs from `want` (relative 1e-3 for averages, whose
/// division NCCL may round differently), or an empty string.
inline std::string mismatch(const std::string& what, const std::vector<double>& got,
                            const std::vector<double>& want, bool approximate = false) {
  if (got.size() != want.size()) return what + ": " + std::to_string(got.size()) + " elements";
  for (std::size_t i = 0; i < got.size(); ++i) {
    const bool same = approximate ? std::abs(got[i] - want[i]) <= 1e-3 * std::abs(want[i])
                                  : got[i] == want[i];
    if (!same) {
      return what + ": element " + std::to_string(i) + " is " + std::to_string(got[i]) +
             ", expected " + std::to_string(want[i]);
    }
  }
  return {};
}

template <class T>
std::vector<double> values(const std::vector<T>& v) {
  std::vector<double> out;
  for (const T& x : v) out.push_back(value_of(x));
  return out;
}

/// One rank's buffers and recording of every collective over `n` elements of T: an all_reduce
/// (sum, or `op`), a broadcast from the last rank, a reduce (max) to rank 0, an all_gather, a
/// reduce_scatter (sum), a ring exchange (send to the next rank, receive from the previous),
/// and an in-place all_reduce (`op`). Outputs are poisoned.
template <class T>
struct EveryCollective {
  std::size_t n;
  int rank, ranks;
  ReduceOp op;
  Buffer<T> send, reduced, broadcast, maxed, gathered, scattered, received, in_place;

  EveryCollective(Device gpu, std::size_t n_, int rank_, int ranks_, ReduceOp op_)
      : n(n_), rank(rank_), ranks(ranks_), op(op_), send(gpu, n * ranks), reduced(gpu, n),
        broadcast(gpu, n), maxed(gpu, n), gathered(gpu, n * ranks), scattered(gpu, n),
        received(gpu, n), in_place(gpu, n) {
    upload(send.view(), input<T>(n * ranks, rank));
    upload(in_place.view(), input<T>(n, rank));
    for (View<T> v : {reduced.view(), broadcast.view(), maxed.view(), gathered.view(),
                      scattered.view(), received.view()}) {
      poison(v);
    }
  }

  void record(CommandBuffer& cmd, const Communicator& comm) {
    cmd.all_reduce(comm, send.subview(0, n), reduced, n, op).named("all_reduce");
    cmd.broadcast(comm, send.subview(0, n), broadcast, n, ranks - 1).named("broadcast");
    cmd.reduce(comm, send.subview(0, n), maxed, n, ReduceOp::max, 0).named("reduce");
    cmd.all_gather(comm, send.subview(0, n), gathered, n).named("all_gather");
    cmd.reduce_scatter(comm, send, scattered, n).named("reduce_scatter");
    const int next = (rank + 1) % ranks, previous = (rank + ranks - 1) % ranks;
    cmd.exchange(comm, {send_to(next, send.subview(0, n), n), recv_from(previous, received, n)})
        .named("exchange");
    cmd.all_reduce(comm, in_place, in_place, n, op).named("in_place");
  }

  /// What is wrong with this rank's outputs after `launches` launches; empty when right.
  std::string check(int launches) const {
    const bool approximate = op == ReduceOp::average;
    std::vector<std::vector<double>> all(ranks);
    for (int r = 0; r < ranks; ++r) all[r] = values(input<T>(n * ranks, r));
    auto over_ranks = [&](ReduceOp how, std::size_t i) {
      std::vector<double> column;
      for (int r = 0; r < ranks; ++r) column.push_back(all[r][i]);
      return reduce_on_host(how, column);
    };
    std::vector<double> reduced_want(n), broadcast_want(n), max_want(n), gathered_want,
        scattered_want(n), received_want(n), in_place_want(n);
    const int previous = (rank + ranks - 1) % ranks;
    for (std::size_t i = 0; i < n; ++i) {
      reduced_want[i] = over_ranks(op, i);
      broadcast_want[i] = all[ranks - 1][i];
      max_want[i] = over_ranks(ReduceOp::max, i);
      scattered_want[i] = over_ranks(ReduceOp::sum, rank * n + i);
      received_want[i] = all[previous][i];
      // Applied once per launch to its own previous result.
      double v = value_of(input<T>(n, rank)[i]);
      for (int k = 0; k < launches; ++k) {
        std::vector<double> column;
        for (int r = 0; r < ranks; ++r) column.push_back(k == 0 ? value_of(input<T>(n, r)[i]) : v);
        v = reduce_on_host(op, column);
      }
      in_place_want[i] = v;
    }
    for (int r = 0; r < ranks; ++r) {
      gathered_want.insert(gathered_want.end(), all[r].begin(), all[r].begin() + n);
    }
    auto got = [&](const Buffer<T>& b, std::size_t count) {
      return values(download(b.view(), count));
    };
    std::string wrong = mismatch("all_reduce", got(reduced, n), reduced_want, approximate);
    if (wrong.empty()) wrong = mismatch("broadcast", got(broadcast, n), broadcast_want);
    if (wrong.empty() && rank == 0) wrong = mismatch("reduce", got(maxed, n), max_want);
    if (wrong.empty()) wrong = mismatch("all_gather", got(gathered, n * ranks), gathered_want);
    if (wrong.empty()) wrong = mismatch("reduce_scatter", got(scattered, n), scattered_want);
    if (wrong.empty()) wrong = mismatch("exchange", got(received, n), received_want);
    if (wrong.empty()) {
      wrong = mismatch("in-place all_reduce", got(in_place, n), in_place_want, approximate);
    }
    return wrong;
  }
};

}  // namespace cmdgraph::testing
