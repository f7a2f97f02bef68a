// Every backend this machine can run, for tests written once for all of them: the host
// backend always, and both CUDA backends on cuda:0 when the library has CUDA and a GPU is
// present (the CPU suites then test the GPU too, wherever they run).
#pragma once

#include <cmdgraph/cmdgraph.hpp>

#include <doctest/doctest.h>

#include <vector>

namespace cmdgraph::testing {

struct BackendOn {
  Device device;
  Backend backend;
  bool cuda() const noexcept { return device.is_cuda(); }
  /// What compile() takes to lower for this backend.
  CompileOptions options() const { return {.backend = backend}; }
};

inline std::vector<BackendOn> available_backends() {
  std::vector<BackendOn> out{{Device::host(), Backend::host}};
  if (Device::count() > 0) {
    out.push_back({Device::cuda(0), Backend::cuda_graph});
    out.push_back({Device::cuda(0), Backend::streams});
  }
  return out;
}

}  // namespace cmdgraph::testing

/// Runs the rest of the block once per available backend, as a SUBCASE named after it;
/// `target` is the BackendOn.
#define CMDGRAPH_EACH_BACKEND(target)                                                 \
  for (const ::cmdgraph::testing::BackendOn& target : ::cmdgraph::testing::available_backends()) \
  SUBCASE(::cmdgraph::to_string(target.backend))
