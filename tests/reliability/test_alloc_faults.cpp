// Allocation failures on the calling thread during record, compile, launch and update on the
// host backend: each must surface as std::bad_alloc or Error(out_of_memory), leave nothing
// behind (LeakSanitizer checks under `meson test --setup asan`) and the library usable.
#include "support/expect_error.hpp"

#include <cmdgraph/cmdgraph.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <thread>

namespace {

// Armed only on the thread that asks: cmdgraph's own workers must not see injected failures
// (an allocation failure there ends the process, as documented).
thread_local long fail_after = -1;  // allocations left before the failing one; -1: off
thread_local long counted = 0;

void* allocate(std::size_t n, std::size_t align) {
  if (fail_after >= 0) {
    ++counted;
    if (fail_after-- == 0) throw std::bad_alloc();
  }
  void* p = align > alignof(std::max_align_t) ? std::aligned_alloc(align, (n + align - 1) / align * align)
                                              : std::malloc(n ? n : 1);
  if (!p) throw std::bad_alloc();
  return p;
}

}  // namespace

void* operator new(std::size_t n) { return allocate(n, alignof(std::max_align_t)); }
void* operator new[](std::size_t n) { return allocate(n, alignof(std::max_align_t)); }
void* operator new(std::size_t n, std::align_val_t a) { return allocate(n, static_cast<std::size_t>(a)); }
void* operator new[](std::size_t n, std::align_val_t a) { return allocate(n, static_cast<std::size_t>(a)); }
// The nothrow forms too, so every form of delete below frees what malloc gave (ASan checks).
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return allocate(n, alignof(std::max_align_t));
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t n, const std::nothrow_t& t) noexcept { return operator new(n, t); }
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  try {
    return allocate(n, static_cast<std::size_t>(a));
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t& t) noexcept {
  return operator new(n, a, t);
}
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }

namespace {

struct Double {
  int* data;
  void operator()(std::size_t i) const { data[i] *= 2; }
};

// A mixed sequence: record (host tasks, parallel_for, copy, fill, nesting, barrier, names),
// compile, launch twice, update, re-record and update the whole executable.
void sequence(std::vector<int>& a, std::vector<int>& b) {
  cmdgraph::CommandBuffer inner("inner");
  inner.fill(cmdgraph::host_view(a.data(), a.size()), 3, a.size()).named("fill");
  cmdgraph::CommandBuffer cmd("mixed");
  auto nested = cmd.execute(inner);
  auto twice = cmd.parallel_for(a.size(), Double{a.data()}).after(nested).named("twice");
  cmd.barrier();
  auto copy = cmd.copy(cmdgraph::host_view(b.data(), b.size()), cmdgraph::host_view(a.data(), a.size()), a.size());
  cmd.host([] {}).after(copy).named("note");
  cmdgraph::Executable exe = cmdgraph::compile(cmd, cmdgraph::Device::host());
  cmdgraph::Queue q(cmdgraph::Device::host());
  exe.launch(q);
  exe.launch(q).wait();
  exe.update(twice, Double{b.data()});
  exe.launch(q).wait();
  (void)twice;
}

}  // namespace

TEST_CASE("reliability.allocation_failures_on_the_calling_thread" * doctest::timeout(300)) {
  std::vector<int> a(64), b(64);
  fail_after = 1'000'000'000;  // count only
  counted = 0;
  sequence(a, b);
  const long total = counted;
  fail_after = -1;
  REQUIRE(total > 20);
  long failures = 0;
  for (long n = 0; n < total; ++n) {
    counted = 0;
    fail_after = n;
    bool failed = false;
    try {
      sequence(a, b);
    } catch (const std::bad_alloc&) {
      failed = true;
    } catch (const cmdgraph::Error& e) {
      failed = true;
      CHECK_MESSAGE(e.code() == cmdgraph::errc::out_of_memory, "allocation " << n << ": " << e.what());
    }
    fail_after = -1;
    failures += failed;
    // Still usable: the whole sequence works right after.
    std::fill(a.begin(), a.end(), 0);
    sequence(a, b);
    CHECK(b[0] == 3);  // after the update the doubling reads b, and the copy brings a's 3 back
  }
  MESSAGE(total << " allocations on the calling thread swept; " << failures << " surfaced as errors");
  CHECK(failures > total / 2);
}
