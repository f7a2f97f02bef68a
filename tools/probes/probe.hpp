// What the probes share: a check that ends the probe on a failed CUDA or CUPTI call (any
// status but 0, printed as a number with the call and its line), and the median of timings.
#pragma once

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(call)                                                                        \
  do {                                                                                     \
    const auto status_ = (call);                                                           \
    if (status_ != 0) {                                                                    \
      std::fprintf(stderr, "line %d: %s -> %d\n", __LINE__, #call, static_cast<int>(status_)); \
      std::exit(1);                                                                        \
    }                                                                                      \
  } while (0)

namespace probe {

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace probe
