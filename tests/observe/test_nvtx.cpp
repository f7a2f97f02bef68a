// NVTX ranges as a tool sees them: the test runs with tests/observe/nvtx_recorder.cpp loaded as
// the NVTX tool (NVTX_INJECTION64_PATH), so every range cmdgraph pushes is recorded. Compile and
// launch get a range on the calling thread; on the host and streams backends so does every
// command, named by the command; every thread's pushes and pops balance.
#include <cmdgraph/cmdgraph.hpp>

#include <doctest/doctest.h>
#include <dlfcn.h>

#include <cstdlib>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

using namespace cmdgraph;

namespace {

struct Ranges {
  std::map<std::string, int> pushed;  // name -> how many times
  bool balanced = true;               // on every thread, never a pop without a push
  int open = 0;                       // pushes not yet popped, over all threads
};

// What the recorder saw since the last call; nullopt while NVTX has not loaded it (it does so
// at the first range pushed in the process).
std::optional<Ranges> take_ranges() {
  const char* path = std::getenv("NVTX_INJECTION64_PATH");
  REQUIRE_MESSAGE(path, "run through meson, which names the recorder as the NVTX tool");
  void* recorder = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
  if (!recorder) return std::nullopt;
  void* symbol = dlsym(recorder, "cmdgraph_test_nvtx_take");
  REQUIRE(symbol != nullptr);
  auto take = reinterpret_cast<void (*)(std::vector<std::string>*)>(symbol);
  std::vector<std::string> events;
  take(&events);
  dlclose(recorder);

  Ranges r;
  std::map<std::string, int> depth;  // per thread
  for (const std::string& e : events) {
    std::istringstream in(e);
    std::string thread, what;
    in >> thread >> what;
    if (what == "push") {
      std::string name;
      std::getline(in >> std::ws, name);
      ++r.pushed[name];
      ++depth[thread];
    } else if (--depth[thread] < 0) {
      r.balanced = false;
    }
  }
  for (const auto& [thread, d] : depth) r.open += d;
  return r;
}

CommandBuffer two_tasks(int& x) {
  CommandBuffer cmd("nvtx step");
  auto first = cmd.host([&x] { x += 1; }).named("first task");
  cmd.host([&x] { x *= 10; }).after(first).named("second task");
  return cmd;
}

}  // namespace

TEST_CASE("observe.nvtx.host_backend_ranges" * doctest::timeout(30)) {
  int x = 0;
  CommandBuffer cmd = two_tasks(x);
  (void)take_ranges();  // forget what came before
  Executable exe = compile(cmd, Device::host());
  Queue q(Device::host());
  exe.launch(q).wait();
  exe.launch(q).wait();
  const std::optional<Ranges> taken = take_ranges();
  REQUIRE_MESSAGE(taken, "NVTX did not load the recorder");
  Ranges r = *taken;
  CHECK(x == 110);
  CHECK(r.pushed["compile nvtx step"] == 1);
  CHECK(r.pushed["nvtx step"] == 2);  // the launches
  CHECK(r.pushed["first task"] == 2);
  CHECK(r.pushed["second task"] == 2);
  CHECK(r.balanced);
  CHECK(r.open == 0);
}

TEST_CASE("observe.nvtx.cuda_backend_ranges" * doctest::timeout(60)) {
  if (Device::count() == 0) {
    MESSAGE("no CUDA device: the CUDA backends' ranges are checked on a GPU machine");
    return;
  }
  for (Backend backend : {Backend::cuda_graph, Backend::streams}) {
    const std::string backend_name = to_string(backend);
    CAPTURE(backend_name);
    int x = 0;
    CommandBuffer cmd = two_tasks(x);
    (void)take_ranges();
    Executable exe = compile(cmd, Device::cuda(0), {.backend = backend});
    Queue q(Device::cuda(0));
    exe.launch(q).wait();
    const std::optional<Ranges> taken = take_ranges();
    REQUIRE_MESSAGE(taken, "NVTX did not load the recorder");
    Ranges r = *taken;
    CHECK(x == 10);
    CHECK(r.pushed["compile nvtx step"] == 1);
    CHECK(r.pushed["nvtx step"] == 1);
    // Commands get ranges where the host enqueues them one by one: on streams, not in a graph.
    const int per_command = backend == Backend::streams ? 1 : 0;
    CHECK(r.pushed["first task"] == per_command);
    CHECK(r.pushed["second task"] == per_command);
    CHECK(r.balanced);
    CHECK(r.open == 0);
  }
}
