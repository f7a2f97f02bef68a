// CUPTI profile mode on a GPU: every kernel, copy and fill of a graph launch (executed buffers
// included) timed by its own activity record, in the order of the edges and named by command;
// CUPTI and events agree on a kernel of known length; traced kernels still overlap; one launch
// in N is profiled, exactly; updates keep the mapping; without CUPTI (failed calls, another
// subscriber) profiles fall back to events and stats() says why. A failing test prints what
// CUPTI delivered (last_cupti_report): the records' node ids and the ids cmdgraph knew.
#include "backend/cuda_launch/cupti_timing.hpp"
#include "cuda/fault_injection.hpp"
#include "cuda/kernels.cuh"
#include "support/expect_error.hpp"
#include "support/loop_shapes.hpp"

#include <cupti.h>

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <unistd.h>

using namespace cmdgraph;
using namespace cmdgraph::testing;
using cmdgraph::detail::cuda::CuptiFaultInjection;

namespace {

constexpr long long cycles_per_us = 1'980;  // H200 at its top clock; a longer spin is fine

std::string report() { return cmdgraph::detail::last_cupti_report(); }

// Compiles `cmd` for the graph backend in CUPTI mode, failing the test (with the reason) when
// CUPTI is not what times it.
Executable traced(CommandBuffer& cmd, const Device& gpu, unsigned every = 1) {
  Executable exe = compile(cmd, gpu, {.backend = Backend::cuda_graph, .profile = true,
                                      .profile_every = every});
  REQUIRE_MESSAGE(exe.stats().profile_mode == ProfileMode::cupti,
                  "not CUPTI: " << exe.stats().profile_reason);
  return exe;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

const CommandTiming* find(const Profile& p, const std::string& name) {
  for (const CommandTiming& c : p.commands) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("cuda.cupti.times_every_kernel_copy_and_fill" * doctest::timeout(120)) {
  const Device gpu = Device::cuda(0);
  constexpr int n = 1 << 16;
  HostBuffer<float> src(n), dst(n);
  std::fill(src.begin(), src.end(), 1.0f);
  Buffer<float> x(gpu, n), y(gpu, n), z(gpu, n);
  Buffer<int> scratch(gpu, n);
  std::atomic<int> notes{0};

  CommandBuffer inner("inner");
  auto spin = inner.launch(&busy, LaunchConfig{{1}, {32}}, 20 * cycles_per_us).named("spin");
  inner.fill(scratch, 7, n).after(spin).named("clear");
  CommandBuffer cmd("traced");
  auto up = cmd.copy(x, src, n).named("upload");
  auto zero = cmd.fill(y, 0.0f, n).named("zero");
  auto axpy = cmd.launch(&axpy_kernel, LaunchConfig{{n / 256}, {256}}, n, 2.0f, x.data(), y.data())
                  .after(up, zero).named("axpy");
  auto scale = cmd.parallel_for(n, Scale{y.data(), z.data(), 0.5f}).after(axpy).named("scale");
  auto note = cmd.host([&] { notes.fetch_add(1); }).after(scale).named("note");
  auto step = cmd.execute(inner).after(note).named("step");
  cmd.copy(dst, z, n).after(step).named("download");

  Executable exe = traced(cmd, gpu);
  Queue q(gpu);
  for (int launch = 0; launch < 3; ++launch) {
    std::fill(dst.begin(), dst.end(), -1.0f);  // poisoned before every run
    exe.launch(q).wait();
    CHECK(std::all_of(dst.begin(), dst.end(), [](float v) { return v == 1.0f; }));
  }
  CHECK(notes.load() == 3);
  const Profile p = exe.last_profile();
  INFO("CUPTI saw: " << report());
  CHECK(p.timing == "cupti");
  CHECK(p.launch == 2);
  CHECK(p.unmeasured == 0);
  std::set<std::string> names;
  for (const CommandTiming& c : p.commands) names.insert(c.name);
  const std::set<std::string> expected{"upload", "zero", "axpy", "scale", "note", "step",
                                       "download", "inner/spin", "inner/clear"};
  CHECK(names == expected);
  for (const CommandTiming& c : p.commands) {
    INFO(c.name << ": " << c.start_ms << " .. " << c.end_ms << " ms");
    CHECK(c.start_ms >= 0);
    CHECK(c.end_ms >= c.start_ms);
    if (c.kind == CommandKind::kernel || c.kind == CommandKind::parallel_for ||
        c.kind == CommandKind::copy || c.kind == CommandKind::fill) {
      CHECK(c.duration_ms() > 0);  // its own record
    }
  }
  const CommandTiming* s = find(p, "inner/spin");
  REQUIRE(s);
  CHECK(s->duration_ms() >= 0.015);  // spins 20 us
  // The edges' order: GPU timestamps of dependent work, and the host task on the host clock
  // placed on CUPTI's (a few microseconds apart at most).
  for (const auto& [from, to] : p.edges) {
    const CommandTiming& a = p.commands[from];
    const CommandTiming& b = p.commands[to];
    const bool host = a.kind == CommandKind::host || b.kind == CommandKind::host;
    INFO(a.name << " -> " << b.name << ": " << a.end_ms << " then " << b.start_ms);
    CHECK(a.end_ms <= b.start_ms + (host ? 0.02 : 0.001));
  }
  CHECK(p.edges.size() >= 7);
  // launch() before the first command; the whole launch inside what the host waited.
  CHECK(p.enqueue_start_ms == 0);
  CHECK(p.enqueue_end_ms > 0);
  CHECK(find(p, "upload")->start_ms >= p.enqueue_start_ms);
  MESSAGE("launch " << p.launch_ms << " ms, launch() " << p.enqueue_end_ms * 1000 << " us; "
                    << report());
}

// The same ~100 us kernel timed both ways: events bracket it inside the graph, CUPTI reads the
// GPU's own start and end. Medians of several launches, alternating.
TEST_CASE("cuda.cupti.agrees_with_events_on_a_100us_kernel" * doctest::timeout(120)) {
  const Device gpu = Device::cuda(0);
  auto record = [] {
    CommandBuffer cmd("hundred");
    cmd.launch(&busy, LaunchConfig{{1}, {32}}, 100 * cycles_per_us).named("k");
    return cmd;
  };
  CommandBuffer a = record(), b = record();
  Executable by_cupti = traced(a, gpu);
  Executable by_events = compile(b, gpu, {.backend = Backend::cuda_graph,
                                          .profile = ProfileMode::events});
  CHECK(by_events.stats().profile_mode == ProfileMode::events);
  Queue q(gpu);
  std::vector<double> cupti_ms, events_ms;
  for (int i = 0; i < 9; ++i) {
    by_cupti.launch(q).wait();
    cupti_ms.push_back(by_cupti.last_profile().commands.at(0).duration_ms());
    by_events.launch(q).wait();
    const Profile e = by_events.last_profile();
    CHECK(e.timing == "events");
    events_ms.push_back(e.commands.at(0).duration_ms());
  }
  const double c = median(cupti_ms), e = median(events_ms);
  INFO("CUPTI " << c * 1000 << " us, events " << e * 1000 << " us; " << report());
  CHECK(c >= 0.05);
  CHECK(std::abs(c - e) <= 0.10 * e);
  MESSAGE("100 us kernel: CUPTI " << c * 1000 << " us, events " << e * 1000 << " us");
}

// 8 independent chains of 8 kernels of ~50 us: traced (concurrent-kernel records), the launch
// takes well under the sum of its kernels, whatever order they ran in.
TEST_CASE("cuda.cupti.traced_kernels_still_overlap" * doctest::timeout(120)) {
  const Device gpu = Device::cuda(0);
  CommandBuffer cmd("chains");
  for (int chain = 0; chain < 8; ++chain) {
    Command prev;
    for (int i = 0; i < 8; ++i) {
      auto k = cmd.launch(&busy, LaunchConfig{{1}, {32}}, 50 * cycles_per_us)
                   .named("c" + std::to_string(chain) + "k" + std::to_string(i));
      if (i) k.after(prev);
      prev = k;
    }
  }
  Executable exe = traced(cmd, gpu);
  Queue q(gpu);
  exe.launch(q).wait();
  exe.launch(q).wait();
  const Profile p = exe.last_profile();
  INFO(report());
  REQUIRE(p.commands.size() == 64);
  CHECK(p.unmeasured == 0);
  double sum = 0, first = 1e9, last = 0;
  for (const CommandTiming& c : p.commands) {
    sum += c.duration_ms();
    first = std::min(first, c.start_ms);
    last = std::max(last, c.end_ms);
  }
  MESSAGE("64 kernels: " << sum << " ms of kernels in " << last - first << " ms");
  CHECK(sum >= 64 * 0.04);
  CHECK(last - first < 0.5 * sum);
}

// profile_every = 3 in CUPTI mode: launches 0, 3, 6, 9 are traced and the profile read after
// any launch is the latest of those. Launch i spins (i + 1) x 10 us, so a profile of another
// launch would show it; between profiled launches, reading again gives the same launch.
TEST_CASE("cuda.cupti.sampling_profiles_one_launch_in_n" * doctest::timeout(120)) {
  const Device gpu = Device::cuda(0);
  CommandBuffer cmd("sampled");
  auto k = cmd.launch(&busy, LaunchConfig{{1}, {32}}, 10 * cycles_per_us).named("k");
  Executable exe = traced(cmd, gpu, 3);
  Queue q(gpu);
  std::vector<std::uint64_t> seen;
  std::map<std::uint64_t, double> duration;  // per profiled launch
  for (int i = 0; i < 10; ++i) {
    exe.update(k, (i + 1) * 10 * cycles_per_us);
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
  CMDGRAPH_EACH_CUDA_BACKEND(backend) {
    CommandBuffer cmd("sampled");
    auto k = cmd.launch(&busy, LaunchConfig{{1}, {32}}, 10 * cycles_per_us).named("k");
    Executable exe = compile(cmd, gpu, {.backend = backend, .profile = ProfileMode::events,
                                        .profile_every = 3});
    CHECK(exe.stats().profile_mode == ProfileMode::events);
    Queue q(gpu), other(gpu);
    std::vector<std::uint64_t> seen;
    std::map<std::uint64_t, double> duration;
    for (int i = 0; i < 10; ++i) {
      exe.update(k, (i + 1) * 10 * cycles_per_us);
      exe.launch(i % 2 ? q : other).wait();  // across queues too
      const Profile p = exe.last_profile();
      seen.push_back(p.launch);
      duration[p.launch] = p.commands.at(0).duration_ms();
    }
    CHECK(seen == std::vector<std::uint64_t>{0, 0, 0, 3, 3, 3, 6, 6, 6, 9});
    CHECK(duration[3] > 2.5 * duration[0]);
    CHECK(duration[9] > 1.2 * duration[6]);
  }
}

TEST_CASE("cuda.cupti.loops_and_captures_are_timed" * doctest::timeout(120)) {
  const Device gpu = Device::cuda(0);
  Buffer<int> counters(gpu, 2);
  constexpr int n = 4096;
  Buffer<float> x(gpu, n), y(gpu, n);
  CommandBuffer body("body");
  CommandBuffer cmd = counting_loop(counters, 20, body);
  cmd.capture([&](NativeStream s) {
       TEST_CUDA(cudaMemsetAsync(y.data(), 0, n * sizeof(float), s));
       axpy_kernel<<<n / 256, 256, 0, s>>>(n, 2.0f, x.data(), y.data());
       TEST_CUDA(cudaGetLastError());
     }).named("library");
  Executable exe = traced(cmd, gpu);
  Queue q(gpu);
  exe.launch(q).wait();
  const Profile p = exe.last_profile();
  INFO(report());
  CHECK(p.unmeasured == 0);
  const CommandTiming* loop = find(p, "count");
  const CommandTiming* library = find(p, "library");
  REQUIRE(loop);
  REQUIRE(library);
  CHECK(loop->duration_ms() > 0);
  CHECK(library->duration_ms() > 0);
  CHECK(find(p, "after")->start_ms >= loop->end_ms - 0.001);
  MESSAGE("loop of 20 passes " << loop->duration_ms() * 1000 << " us, capture "
                               << library->duration_ms() * 1000 << " us; " << report());
}

TEST_CASE("cuda.cupti.updates_keep_every_command_timed" * doctest::timeout(120)) {
  const Device gpu = Device::cuda(0);
  Buffer<int> d(gpu, 4);
  auto record = [&](int value, bool extra) {
    CommandBuffer cmd("updated");
    auto a = cmd.launch(&set_kernel, LaunchConfig{{1}, {4}}, 4, value, d.data()).named("a");
    auto b = cmd.fill(d, value, 4).after(a).named("b");
    if (extra) cmd.launch(&busy, LaunchConfig{{1}, {1}}, 1000ll).after(b).named("c");
    return cmd;
  };
  CommandBuffer first = record(1, false);
  Executable exe = traced(first, gpu);
  Queue q(gpu);
  exe.launch(q).wait();
  CommandBuffer same = record(2, false);
  CHECK(!exe.update(same).reinstantiated);  // in place
  exe.launch(q).wait();
  Profile p = exe.last_profile();
  INFO(report());
  CHECK(p.unmeasured == 0);
  CHECK(p.commands.size() == 2);
  CommandBuffer other = record(3, true);
  CHECK(exe.update(other, {.reinstantiate_if_needed = true}).reinstantiated);
  CMDGRAPH_EXPECT_ERROR((void)exe.last_profile(), errc::wrong_state);  // not launched since
  exe.launch(q).wait();
  p = exe.last_profile();
  CHECK(p.unmeasured == 0);
  CHECK(p.commands.size() == 3);
  Executable copy = exe.clone();
  copy.launch(q).wait();
  CHECK(copy.last_profile().unmeasured == 0);
}

TEST_CASE("cuda.cupti.trace_shows_the_host_side" * doctest::timeout(120)) {
  const Device gpu = Device::cuda(0);
  CommandBuffer cmd("traced");
  auto a = cmd.launch(&busy, LaunchConfig{{1}, {1}}, 10 * cycles_per_us).named("a");
  auto h = cmd.host([] {}).after(a).named("h");
  cmd.launch(&busy, LaunchConfig{{1}, {1}}, 10 * cycles_per_us).after(h).named("b");
  Executable exe = traced(cmd, gpu);
  Queue q(gpu);
  exe.launch(q).wait();
  const Profile p = exe.last_profile();
  const std::string json = p.trace_json();
  CHECK(json.find("\"launch()\"") != std::string::npos);
  CHECK(json.find("\"launch latency\"") != std::string::npos);
  CHECK(json.find("\"GPU idle\"") != std::string::npos);  // a to b waits for the host task
  MESSAGE(json);
}

// CUPTI made unavailable through its door: compile() falls back to events and says why, and
// the profile is complete; asked for explicitly, CUPTI's absence is an error.
TEST_CASE("cuda.cupti.falls_back_to_events_when_unavailable" * doctest::timeout(120)) {
  const Device gpu = Device::cuda(0);
  Buffer<int> d(gpu, 1);
  auto record = [&] {
    CommandBuffer cmd("fallback");
    auto a = cmd.launch(&set_kernel, LaunchConfig{{1}, {1}}, 1, 5, d.data()).named("a");
    cmd.fill(d, 0, 1).after(a).named("b");
    return cmd;
  };
  for (int failing = 1; failing <= 3; ++failing) {
    CAPTURE(failing);
    CommandBuffer cmd = record();
    CuptiFaultInjection::counter().fail_call(failing,
                                             CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
    Executable exe = compile(cmd, gpu, {.backend = Backend::cuda_graph, .profile = true});
    const std::uint64_t calls = CuptiFaultInjection::counter().calls();
    CuptiFaultInjection::counter().disarm();
    if (calls < static_cast<std::uint64_t>(failing)) break;  // compile made fewer calls
    CHECK(exe.stats().profile_mode == ProfileMode::events);
    CHECK(exe.stats().profile_reason.find("CUPTI") != std::string::npos);
    MESSAGE("call " << failing << " failing: " << exe.stats().profile_reason);
    Queue q(gpu);
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
  Queue q(gpu);
  ok.launch(q).wait();
  CHECK(ok.last_profile().unmeasured == 0);
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
// Nsight Systems would; cmdgraph then times with events and names the reason.
TEST_CASE("cuda.cupti.child_another_subscriber" * doctest::timeout(60)) {
  if (!std::getenv("CMDGRAPH_TEST_CUPTI_CHILD")) return;  // only in its own process
  CUpti_SubscriberHandle other = nullptr;
  REQUIRE(cuptiSubscribe(&other, &ignore_callbacks, nullptr) == CUPTI_SUCCESS);
  const Device gpu = Device::cuda(0);
  Buffer<int> d(gpu, 1);
  CommandBuffer cmd("second");
  cmd.launch(&set_kernel, LaunchConfig{{1}, {1}}, 1, 5, d.data()).named("a");
  Executable exe = compile(cmd, gpu, {.backend = Backend::cuda_graph, .profile = true});
  MESSAGE("stats say: " << exe.stats().profile_reason);
  CHECK(exe.stats().profile_mode == ProfileMode::events);
  CHECK(exe.stats().profile_reason.find("another CUPTI client") != std::string::npos);
  Queue q(gpu);
  exe.launch(q).wait();
  CHECK(exe.last_profile().timing == "events");
  CHECK(cuptiUnsubscribe(other) == CUPTI_SUCCESS);
}

TEST_CASE("cuda.cupti.another_subscriber_means_events" * doctest::timeout(120)) {
  if (std::getenv("CMDGRAPH_TEST_CUPTI_CHILD")) return;
  const std::string command = "CMDGRAPH_TEST_CUPTI_CHILD=1 /proc/" + std::to_string(getpid()) +
                              "/exe --test-case=cuda.cupti.child_another_subscriber --success=0";
  const int status = std::system(command.c_str());
  CHECK_MESSAGE(status == 0, "the child process (" << command << ") ended with " << status);
}
