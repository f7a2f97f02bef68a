// libFuzzer target: decodes bytes into recording, edge, compile, launch and update calls on two
// command buffers, valid and invalid. The library may throw cmdgraph::Error and nothing else.
#include "byte_reader.hpp"
#include "fuzz_target.hpp"

#include <cmdgraph/cmdgraph.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <deque>
#include <stdexcept>
#include <utility>
#include <vector>

namespace cmdgraph::fuzz {
namespace {

constexpr std::size_t max_operations = 64;
constexpr std::size_t large_memory = 1024;  // past one parallel_for chunk (256 indices)

// A parallel_for functor: stores i + offset into out[i] for i below size, ignores the rest.
struct StoreIndex {
  int* out;
  std::size_t size;
  int offset;
  void operator()(std::size_t i) const {
    if (i < size) {
      std::atomic_ref<int>(out[i]).store(static_cast<int>(i) + offset, std::memory_order_relaxed);
    }
  }
};

void host_only_kernel(int, float) {}

// A loop condition that holds for the first `limit` checks of its counter, ever: every loop
// ends, however often and from whichever clone it runs.
struct FirstChecks {
  std::atomic<unsigned>* checks;
  unsigned limit;
  bool operator()() const { return checks->fetch_add(1, std::memory_order_relaxed) < limit; }
};

// The memory one input's commands read and write. Views into it never claim more than it has.
struct Memory {
  std::array<std::vector<int>, 3> ints{std::vector<int>(1), std::vector<int>(7),
                                       std::vector<int>(large_memory)};
  std::vector<std::uint8_t> bytes = std::vector<std::uint8_t>(large_memory);
  std::vector<int> parallel_out = std::vector<int>(large_memory);
};

// A count for a command: mostly small (zero included), now and then up to 4x large_memory.
std::size_t pick_count(ByteReader& in) {
  const std::size_t b = in.byte();
  return b < 240 ? b % 26 : (b - 239) * 256;
}

// A view that is null, empty, whole, or a sub-range of `memory`.
template <class T>
View<T> pick_view(ByteReader& in, std::vector<T>& memory) {
  switch (in.below(4)) {
    case 0: return host_view<T>(nullptr, in.below(3));
    case 1: return host_view(memory.data() + in.below(memory.size() + 1), 0);
    case 2: return host_view(memory.data(), memory.size());
    default: {
      const std::size_t offset = in.below(memory.size() + 1);
      return host_view(memory.data() + offset, in.below(memory.size() - offset + 1));
    }
  }
}

// One input's world: buffers, executables, handles (valid, default, moved-from, foreign,
// stale) and the operations on them. Members are destroyed executables first, memory last.
class Session {
 public:
  void run(ByteReader& in) {
    for (std::size_t i = 0; i < max_operations && !in.exhausted(); ++i) {
      try {
        apply(in.byte(), in);
      } catch (const Error&) {
        // Rejected misuse is an expected outcome; anything else escapes to the fuzzer.
      }
    }
  }

 private:
  void apply(std::uint8_t operation, ByteReader& in);

  CommandBuffer& pick_buffer(ByteReader& in) { return buffers_[in.below(buffers_.size())]; }
  Executable& pick_executable(ByteReader& in) {
    return executables_[in.below(executables_.size())];
  }
  View<int> pick_ints(ByteReader& in) { return pick_view(in, memory_.ints[in.below(3)]); }
  Command pick_handle(ByteReader& in);
  template <class Handle>
  Handle pick_typed(ByteReader& in, const std::vector<Handle>& handles) {
    const std::size_t k = in.below(handles.size() + 1);
    return k < handles.size() ? handles[k] : Handle{};
  }
  template <class Handle>
  void remember(const Handle& handle, std::vector<Handle>* typed = nullptr) {
    handles_.push_back(handle);
    if (typed) typed->push_back(handle);
  }
  StoreIndex pick_functor(ByteReader& in) {
    return {memory_.parallel_out.data(), std::min(pick_count(in), large_memory),
            static_cast<int>(in.byte())};
  }

  void record_host(ByteReader& in);
  void record_parallel_for(ByteReader& in);
  void record_copy(ByteReader& in);
  void record_fill(ByteReader& in);
  void record_other(ByteReader& in);
  void add_edges(ByteReader& in);
  void change_buffer(ByteReader& in);
  void compile_buffer(ByteReader& in);
  void launch(ByteReader& in);
  void update(ByteReader& in);
  void inspect(ByteReader& in);

  Memory memory_;
  std::deque<std::atomic<unsigned>> loop_checks_;  // one per loop, at a stable address
  std::atomic<int> host_runs_{0};
  Queue queue_{Device::host()};
  Event event_{Device::host()};
  std::array<CommandBuffer, 2> buffers_{CommandBuffer("a"), CommandBuffer("b")};
  std::array<Executable, 2> executables_;
  std::vector<Command> handles_;
  std::vector<ParallelForCommand<StoreIndex>> parallel_fors_;
  std::vector<CopyCommand<int>> copies_;
  std::vector<FillCommand<int>> fills_;
};

void Session::apply(std::uint8_t operation, ByteReader& in) {
  switch (operation % 12) {
    case 0: record_host(in); break;
    case 1: record_parallel_for(in); break;
    case 2: record_copy(in); break;
    case 3: record_fill(in); break;
    case 4: record_other(in); break;
    case 5: add_edges(in); break;
    case 6: change_buffer(in); break;
    case 7: compile_buffer(in); break;
    case 8: launch(in); break;
    case 9: update(in); break;
    case 10: inspect(in); break;
    default: {
      Command command = pick_handle(in);
      command.named(in.name());
    }
  }
}

Command Session::pick_handle(ByteReader& in) {
  const std::size_t k = in.below(handles_.size() + 2);
  if (k < handles_.size()) return handles_[k];
  if (k == handles_.size()) return Command{};
  Command moved_from = handles_.empty() ? Command{} : handles_.back();
  const Command taker = std::move(moved_from);
  static_cast<void>(taker);
  return moved_from;
}

void Session::record_host(ByteReader& in) {
  CommandBuffer& cmd = pick_buffer(in);
  if (in.flip()) {
    remember(cmd.host([this] { host_runs_.fetch_add(1, std::memory_order_relaxed); }));
  } else {
    remember(cmd.host([] { throw std::runtime_error("host task failed on purpose"); }));
  }
}

void Session::record_parallel_for(ByteReader& in) {
  CommandBuffer& cmd = pick_buffer(in);
  const std::size_t n = pick_count(in);
  remember(cmd.parallel_for(n, pick_functor(in)), &parallel_fors_);
}

void Session::record_copy(ByteReader& in) {
  CommandBuffer& cmd = pick_buffer(in);
  const View<int> dst = pick_ints(in);
  const View<int> src = pick_ints(in);
  remember(cmd.copy(dst, src, pick_count(in)), &copies_);
}

void Session::record_fill(ByteReader& in) {
  CommandBuffer& cmd = pick_buffer(in);
  const std::size_t count = pick_count(in);
  if (in.flip()) {
    const View<int> dst = pick_ints(in);
    remember(cmd.fill(dst, static_cast<int>(in.byte()) - 128, count), &fills_);
  } else {
    const View<std::uint8_t> dst = pick_view(in, memory_.bytes);
    remember(cmd.fill(dst, in.byte(), count));
  }
}

void Session::record_other(ByteReader& in) {
  CommandBuffer& cmd = pick_buffer(in);
  switch (in.below(7)) {
    case 0: remember(cmd.barrier()); break;
    case 1: remember(cmd.execute(pick_buffer(in))); break;
    case 2: remember(cmd.record(event_)); break;
    case 3: remember(cmd.wait(event_)); break;
    case 4: remember(cmd.capture([](NativeStream) {})); break;
    case 5: {
      std::atomic<unsigned>& checks = loop_checks_.emplace_back(0);
      const auto limit = static_cast<unsigned>(in.below(4));
      remember(cmd.loop_while(pick_buffer(in), FirstChecks{&checks, limit}));
      break;
    }
    default: {
      const LaunchConfig config{{static_cast<unsigned>(in.below(2))}, {1}, 0};
      remember(Command(cmd.launch(host_only_kernel, config, 1, 2.0)));
    }
  }
}

void Session::add_edges(ByteReader& in) {
  Command child = pick_handle(in);
  switch (in.below(4)) {
    case 0: child.after(pick_handle(in)); break;
    case 1: {
      const Command first = pick_handle(in);
      child.after(first, pick_handle(in));
      break;
    }
    case 2: {
      CommandBuffer& cmd = pick_buffer(in);
      cmd.depends_on(child, pick_handle(in));
      break;
    }
    default: {
      std::vector<Command> parents;
      for (std::size_t i = in.below(4); i > 0; --i) parents.push_back(pick_handle(in));
      child.after_all(parents);
    }
  }
}

void Session::change_buffer(ByteReader& in) {
  CommandBuffer& cmd = pick_buffer(in);
  switch (in.below(4)) {
    case 0: cmd.reset(); break;
    case 1: cmd = CommandBuffer(in.name()); break;
    case 2: {
      const CommandBuffer taken = std::move(cmd);
      break;
    }
    default: std::swap(buffers_[0], buffers_[1]);
  }
}

void Session::compile_buffer(ByteReader& in) {
  static constexpr Backend backends[] = {Backend::automatic, Backend::host, Backend::cuda_graph,
                                         Backend::streams};
  CommandBuffer& cmd = pick_buffer(in);
  Executable& exe = pick_executable(in);
  const CompileOptions options{backends[in.below(4)], static_cast<unsigned>(in.below(5))};
  exe = compile(cmd, Device::host(), options);
}

void Session::launch(ByteReader& in) {
  Executable& exe = pick_executable(in);
  Fence last;
  for (std::size_t i = in.below(3) + 1; i > 0; --i) last = exe.launch(queue_);
  if (in.flip()) last.wait();
  queue_.wait();
}

void Session::update(ByteReader& in) {
  Executable& exe = pick_executable(in);
  switch (in.below(5)) {
    case 0: {
      const auto command = pick_typed(in, parallel_fors_);
      exe.update(command, pick_functor(in));
      break;
    }
    case 1: {
      const auto command = pick_typed(in, parallel_fors_);
      const std::size_t n = pick_count(in);
      exe.update(command, n, pick_functor(in));
      break;
    }
    case 2: {
      const auto command = pick_typed(in, copies_);
      const View<int> dst = pick_ints(in);
      const View<int> src = pick_ints(in);
      exe.update(command, dst, src, pick_count(in));
      break;
    }
    case 3: {
      const auto command = pick_typed(in, fills_);
      const View<int> dst = pick_ints(in);
      const int value = in.byte();
      exe.update(command, dst, value, pick_count(in));
      break;
    }
    default: {
      CommandBuffer& rerecorded = pick_buffer(in);
      exe.update(rerecorded, UpdateOptions{in.flip()});
    }
  }
}

void Session::inspect(ByteReader& in) {
  const CommandBuffer& cmd = pick_buffer(in);
  static_cast<void>(cmd.size() + cmd.sealed() + cmd.name().size());
  static_cast<void>(pick_handle(in).name());
  const Executable& exe = pick_executable(in);
  if (!exe) return;
  static_cast<void>(exe.stats().commands + exe.name().size());
  if (in.flip()) pick_executable(in) = exe.clone();
}

}  // namespace
}  // namespace cmdgraph::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  cmdgraph::fuzz::ByteReader in(data, size);
  cmdgraph::fuzz::Session session;
  session.run(in);
  return 0;
}
