// Checked raw CUPTI for the benchmarks that drive CUPTI by hand (bench_profile's probe,
// bench_cupti_side): a failed call prints where and why, and ends the benchmark.
#pragma once

#include <cupti.h>

#include <cstdio>
#include <cstdlib>

#define BENCH_CUPTI(call)                                                                 \
  do {                                                                                    \
    const CUptiResult status_ = (call);                                                   \
    if (status_ != CUPTI_SUCCESS) {                                                       \
      const char* what_ = nullptr;                                                        \
      cuptiGetResultString(status_, &what_);                                              \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, what_);         \
      std::exit(1);                                                                       \
    }                                                                                     \
  } while (0)
