// CUPTI profile mode, sampled and refused: one launch in N is profiled, exactly (CUPTI and
// events, both CUDA backends); a launch CUPTI could not trace says so; without CUPTI (failed
// calls, another subscriber in a process of its own) profiles fall back to events and stats()
// says why.
#include "cuda/cupti_support.cuh"
#include "cuda/fault_injection.hpp"
#include "support/child_process.hpp"
#include "support/expect_error.hpp"

#include <cupti.h>

#include <doctest/doctest.h>

#include <cstdlib>
#include <map>
#include <string>
#include <vector>


using namespace cmdgraph;
using namespace cmdgraph::testing;
using cmdgraph::detail::cuda::CuptiFaultInjection;

namespace {
constexpr const char* child_marker = "CMDGRAPH_TEST_CUPTI_CHILD";
}  // namespace

// profile_every = 3 in CUPTI mode: launches 0, 3, 6, 9 are traced and the profile read after
// any launch is the latest of those. Launch i spins (i + 1) x 10 us, so a profile of another
// launch would show it; between profiled launches, reading again gives the same launch.
TEST_CASE("cuda.cupti.sampling_profiles_one_launch_in_n" * doctest::timeout(120)) {
  const Device gpu = Device::cuda(0);
  CommandBuffer cmd("sampled");
  auto k = cmd.launch(&busy_ns, LaunchConfig{{1}, {32}}, 10'000LL).named("k");
  Executable exe = traced(cmd, gpu, 3);
  Queue q(gpu);
  std::vector<std::uint64_t> seen;
  std::map<std::uint64_t, double> duration;  // per profiled launch
  for (int i = 0; i < 10; ++i) {
    exe.update(k, (i + 1) * 10'000LL);  // ns
    exe.launch(q).wait();
    const Profile p = exe.last_profile();
    INFO("after launch " << i << ": " << report());
    REQUIRE(p.commands.size() == 1);
    CHECK(p.unmeasured == 0);
    seen.push_back(p.launch);
    const double d = p.commands[0].duration_ms();
    if (duration.count(p.launch)) {
      CHECK(d == duration[p.launch]);  // the same launch's records, not a later one's
    }
    duration[p.launch] = d;
  }
  CHECK(seen == std::vector<std::uint64_t>{0, 0, 0, 3, 3, 3, 6, 6, 6, 9});
  // Launch i spun (i + 1) x 10 us: 10, 40, 70 and 100 us.
  INFO("durations: " << duration[0] << ' ' << duration[3] << ' ' << duration[6] << ' '
                     << duration[9]);
  CHECK(duration[3] > 2.5 * duration[0]);
  CHECK(duration[6] > 1.4 * duration[3]);
  CHECK(duration[9] > 1.2 * duration[6]);
}

// The same exactness with events, on both CUDA backends (the graph keeps an instantiation
// without event nodes for the launches it does not profile).
TEST_CASE("cuda.profile.sampling_with_events_on_every_backend" * doctest::timeout(120)) {
  const Device gpu = Device::cuda(0);
  // Loads the kernel's module: on streams, events bracket the launch call, and CUDA loads a
  // module at its kernel's first launch (run 55: the first profiled launch measured 52-58 us
  // for 10 us of spinning, the later ones 8 us over).
  busy_ns<<<1, 1>>>(0);
  TEST_CUDA(cudaDeviceSynchronize());
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    CommandBuffer cmd("sampled");
    auto k = cmd.launch(&busy_ns, LaunchConfig{{1}, {32}}, 10'000LL).named("k");
    Executable exe = compile(cmd, gpu, {.backend = backend, .profile = ProfileMode::events,
                                        .profile_every = 3});
    CHECK(exe.stats().profile_mode == ProfileMode::events);
    Queue q(gpu), other(gpu);
    std::vector<std::uint64_t> seen;
    std::map<std::uint64_t, double> duration;
    for (int i = 0; i < 10; ++i) {
      exe.update(k, (i + 1) * 10'000LL);  // ns
      exe.launch(i % 2 ? q : other).wait();  // across queues too
      const Profile p = exe.last_profile();
      seen.push_back(p.launch);
      duration[p.launch] = p.commands.at(0).duration_ms();
    }
    CHECK(seen == std::vector<std::uint64_t>{0, 0, 0, 3, 3, 3, 6, 6, 6, 9});
    // Launches 0, 3, 6 and 9 spun 10, 40, 70 and 100 us (the GPU's global timer): each
    // profiled launch's figure is its own, at least its spin, so none is an earlier launch's
    // (30 us less). Only lower bounds: events add to each, by a few us usually (run 54: 39,
    // 46, 76 and 106 us) and once by 22 us on streams (run 71: 68 us for launch 3's 40).
    INFO(std::string(to_string(backend)) << " durations: " << duration[0] << " " << duration[3]
                                         << " " << duration[6] << " " << duration[9] << " ms");
    for (const std::uint64_t launch : {0, 3, 6, 9}) {
      CAPTURE(launch);
      CHECK(duration[launch] >= 0.001 * (10.0 * static_cast<double>(launch) + 10.0));
    }
  }
}

namespace {
// Kernel 'a' sets d[0], then 'b' fills it: one kernel and one fill for CUPTI to trace.
CommandBuffer kernel_then_fill(const std::string& name, Buffer<int>& d) {
  CommandBuffer cmd(name);
  auto a = cmd.launch(&set_kernel, LaunchConfig{{1}, {1}}, 1, 5, d.data()).named("a");
  cmd.fill(d, 0, 1).after(a).named("b");
  return cmd;
}
}  // namespace

// Once CUPTI is started, `profile = true` takes CUPTI where it is usable and timed events
// where CUPTI refuses (here through its door); CUPTI asked for where it refuses is an error.
TEST_CASE("cuda.cupti.falls_back_to_events_when_unavailable" * doctest::timeout(120)) {
  const Device gpu = Device::cuda(0);
  Buffer<int> d(gpu, 1);
  auto record = [&] { return kernel_then_fill("fallback", d); };
  Queue q(gpu);
  CommandBuffer starter = record();
  (void)traced(starter, gpu);  // CUPTI started, whichever tests ran before
  {
    CommandBuffer cmd = record();
    Executable exe = compile(cmd, gpu, {.backend = Backend::cuda_graph, .profile = true});
    CHECK(exe.stats().profile_mode == ProfileMode::cupti);
    exe.launch(q).wait();
    const Profile p = exe.last_profile();
    CHECK(p.timing == "cupti");
    CHECK(p.commands.size() == 2);
    CHECK(p.unmeasured == 0);
  }
  {
    CommandBuffer cmd = record();
    CuptiFaultInjection::counter().fail_call(1, CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
    Executable exe = compile(cmd, gpu, {.backend = Backend::cuda_graph, .profile = true});
    CuptiFaultInjection::counter().disarm();
    CHECK(exe.stats().profile_mode == ProfileMode::events);
    MESSAGE("fell back: " << exe.stats().profile_reason);
    CHECK(exe.stats().profile_reason.find("CUPTI is not usable") != std::string::npos);
    exe.launch(q).wait();
    const Profile p = exe.last_profile();
    CHECK(p.timing == "events");
    CHECK(p.commands.size() == 2);
  }
  CommandBuffer cmd = record();
  CuptiFaultInjection::counter().fail_call(1, CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
  auto e = CMDGRAPH_EXPECT_ERROR(
      compile(cmd, gpu, {.backend = Backend::cuda_graph, .profile = ProfileMode::cupti}),
      errc::unsupported);
  CuptiFaultInjection::counter().disarm();
  REQUIRE(e);
  CHECK(mentions(*e, "CUPTI"));
  // The streams backend is timed by events; CUPTI asked for there is refused.
  CommandBuffer s = record();
  Executable streams = compile(s, gpu, {.backend = Backend::streams, .profile = true});
  CHECK(streams.stats().profile_mode == ProfileMode::events);
  CommandBuffer s2 = record();
  CMDGRAPH_EXPECT_ERROR(
      compile(s2, gpu, {.backend = Backend::streams, .profile = ProfileMode::cupti}),
      errc::unsupported);
  // Afterwards CUPTI works again.
  CommandBuffer again = record();
  Executable ok = traced(again, gpu);
  ok.launch(q).wait();
  CHECK(ok.last_profile().unmeasured == 0);
}

// Only CUPTI's own refusals turn profile = true to events: a CUDA call failing while a
// CUPTI-mode executable is built is an error, even where its message says "CUPTI" (here the
// executable's name, in every failure served for it). Each CUDA call of the build fails in
// turn: the compile throws, or (a failure CUDA tolerates) it is still traced by CUPTI.
TEST_CASE("cuda.cupti.a_cuda_failure_is_not_taken_for_cupti_refusing" * doctest::timeout(300)) {
  using cmdgraph::detail::cuda::FaultInjection;
  const Device gpu = Device::cuda(0);
  Buffer<int> d(gpu, 1);
  auto record = [&] { return kernel_then_fill("CUPTI-traced step", d); };
  CommandBuffer starter = record();
  (void)traced(starter, gpu);  // CUPTI started, whichever tests ran before
  const CompileOptions options{.backend = Backend::cuda_graph, .profile = true};
  CommandBuffer counted = record();
  FaultInjection::count_calls();
  { Executable exe = compile(counted, gpu, options); }
  const std::uint64_t total = FaultInjection::calls();
  FaultInjection::disarm();
  REQUIRE(total > 3);
  std::size_t thrown = 0, named = 0;
  for (std::uint64_t n = 1; n <= total; ++n) {
    CAPTURE(n);
    CommandBuffer cmd = record();
    FaultInjection::fail_call(n, cudaErrorInvalidValue);
    try {
      Executable exe = compile(cmd, gpu, options);
      FaultInjection::disarm();
      CHECK_MESSAGE(exe.stats().profile_mode == ProfileMode::cupti, exe.stats().profile_reason);
    } catch (const Error& e) {
      FaultInjection::disarm();
      ++thrown;
      named += mentions(e, "CUPTI-traced step");
      CHECK(e.code() == errc::cuda_error);
    }
  }
  CHECK(thrown > 0);
  CHECK(named > 0);  // the messages did say "CUPTI"
}

// A profiled launch CUPTI could not trace (switching collection on failed) still runs;
// last_profile() then says so, and the next profiled launch is traced again.
TEST_CASE("cuda.cupti.untraced_launch_is_reported_by_last_profile" * doctest::timeout(120)) {
  const Device gpu = Device::cuda(0);
  Buffer<int> d(gpu, 1);
  CommandBuffer cmd("untraced");
  cmd.launch(&set_kernel, LaunchConfig{{1}, {1}}, 1, 5, d.data()).named("a");
  Executable exe = traced(cmd, gpu, 2);
  Queue q(gpu);
  exe.launch(q);
  exe.launch(q).wait();
  CHECK(exe.last_profile().launch == 0);
  CuptiFaultInjection::counter().fail_call(1, CUPTI_ERROR_UNKNOWN);
  exe.launch(q).wait();  // launch 2, profiled: its CUPTI call fails, the launch runs
  CuptiFaultInjection::counter().disarm();
  auto e = CMDGRAPH_EXPECT_ERROR((void)exe.last_profile(), errc::cuda_error);
  REQUIRE(e);
  CHECK(mentions(*e, "launch 2"));
  exe.launch(q);
  exe.launch(q).wait();
  const Profile p = exe.last_profile();
  CHECK(p.launch == 4);
  CHECK(p.unmeasured == 0);
}

namespace {
void CUPTIAPI ignore_callbacks(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}
}  // namespace

// Run in a process of its own by the next test: another CUPTI client subscribes first, as
// Nsight Systems would; CUPTI mode is then refused naming the reason, and profile = true
// times with events (CUPTI never started).
namespace {
// CUPTI mode is refused with an error mentioning each of `reasons`; cmdgraph's session never
// started, so profile = true does not try CUPTI and times with events.
void cupti_refused_then_events(std::initializer_list<const char*> reasons) {
  const Device gpu = Device::cuda(0);
  Buffer<int> d(gpu, 1);
  CommandBuffer cmd("refused");
  cmd.launch(&set_kernel, LaunchConfig{{1}, {1}}, 1, 5, d.data()).named("a");
  auto e = CMDGRAPH_EXPECT_ERROR(
      compile(cmd, gpu, {.backend = Backend::cuda_graph, .profile = ProfileMode::cupti}),
      errc::unsupported);
  REQUIRE(e);
  MESSAGE("refused: " << e->what());
  for (const char* reason : reasons) CHECK(mentions(*e, reason));
  Executable exe = compile(cmd, gpu, {.backend = Backend::cuda_graph, .profile = true});
  CHECK(exe.stats().profile_mode == ProfileMode::events);
  CHECK(exe.stats().profile_reason.find("CUPTI is not started") != std::string::npos);
  Queue q(gpu);
  exe.launch(q).wait();
  CHECK(exe.last_profile().timing == "events");
}
}  // namespace

TEST_CASE("cuda.cupti.child_another_subscriber" * doctest::timeout(60)) {
  if (!in_child(child_marker)) return;  // only in its own process
  CUpti_SubscriberHandle other = nullptr;
  REQUIRE(cuptiSubscribe(&other, &ignore_callbacks, nullptr) == CUPTI_SUCCESS);
  cupti_refused_then_events({"another CUPTI client"});
  CHECK(cuptiUnsubscribe(other) == CUPTI_SUCCESS);
}

// Run in a process of its own by the next test: `profile = true` takes timed events while
// CUPTI is not started (starting it costs every graph launch of the process), and CUPTI once
// an executable asked for it by name.
TEST_CASE("cuda.cupti.child_profile_true_waits_for_cupti" * doctest::timeout(60)) {
  if (!in_child(child_marker)) return;  // only in its own process
  const Device gpu = Device::cuda(0);
  Buffer<int> d(gpu, 1);
  CommandBuffer cmd("waits");
  cmd.launch(&set_kernel, LaunchConfig{{1}, {1}}, 1, 5, d.data()).named("a");
  Queue q(gpu);
  Executable before = compile(cmd, gpu, {.backend = Backend::cuda_graph, .profile = true});
  CHECK(before.stats().profile_mode == ProfileMode::events);
  CHECK(before.stats().profile_reason ==
        "timed events, since CUPTI is not started in this process: once started it costs "
        "every graph launch of the process host time until the process ends (about 0.4 us a "
        "node, traced or not); ProfileMode::cupti starts it");
  before.launch(q).wait();
  CHECK(before.last_profile().timing == "events");
  Executable asked = traced(cmd, gpu);
  Executable after = compile(cmd, gpu, {.backend = Backend::cuda_graph, .profile = true});
  CHECK(after.stats().profile_mode == ProfileMode::cupti);
  after.launch(q).wait();
  CHECK(after.last_profile().timing == "cupti");
  CHECK(after.last_profile().unmeasured == 0);
}

TEST_CASE("cuda.cupti.profile_true_waits_for_cupti" * doctest::timeout(120)) {
  if (in_child(child_marker)) return;
  run_child(child_marker, "cuda.cupti.child_profile_true_waits_for_cupti");
}

// Run in a process of its own by the next test, with CMDGRAPH_CUPTI_LIBRARY naming no file:
// libcmdgraph loads libcupti when a CUPTI session first starts, so CUPTI mode is refused
// saying which library could not be loaded and from where, and profile = true times with
// events. (This process links libcupti itself; the variable still decides what cmdgraph loads.)
TEST_CASE("cuda.cupti.child_library_missing" * doctest::timeout(60)) {
  if (!in_child(child_marker)) return;  // only in its own process
  cupti_refused_then_events({"CUPTI (libcupti) could not be loaded", "/nonexistent/libcupti.so",
                             "CMDGRAPH_CUPTI_LIBRARY"});
}

TEST_CASE("cuda.cupti.missing_library_means_events" * doctest::timeout(120)) {
  if (in_child(child_marker)) return;
  run_child(child_marker, "cuda.cupti.child_library_missing",
            "CMDGRAPH_CUPTI_LIBRARY=/nonexistent/libcupti.so");
}

TEST_CASE("cuda.cupti.another_subscriber_means_events" * doctest::timeout(120)) {
  if (in_child(child_marker)) return;
  run_child(child_marker, "cuda.cupti.child_another_subscriber");
}
