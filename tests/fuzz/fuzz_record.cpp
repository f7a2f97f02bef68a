// libFuzzer target: decodes bytes into calls on cmdgraph's public API, valid and invalid (the
// families are listed in session.hpp). This file: the entry point, the session's life, and
// recording, edges, compile, launch and inspection.
#include "internals.hpp"
#include "session.hpp"

#include <cmdgraph/cmdgraph.hpp>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <stdexcept>
#include <utility>
#include <vector>

namespace cmdgraph::fuzz {

void host_only_kernel(int, float) {}

void violated(const char* rule, const char* detail) {
  std::fprintf(stderr, "cmdgraph fuzz: rule broken: %s%s%s\n", rule, *detail ? ": " : "", detail);
  std::abort();
}

std::size_t pick_count(ByteReader& in) {
  const std::size_t b = in.byte();
  return b < 240 ? b % 26 : (b - 239) * 256;
}

std::chrono::nanoseconds pick_timeout(ByteReader& in) {
  using namespace std::chrono_literals;
  static constexpr std::chrono::nanoseconds timeouts[] = {0ns, -1ms, 1us, 200us, 1ms, 2ms};
  return timeouts[in.below(std::size(timeouts))];
}

namespace {

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

// What the library must have refused: a command over null, empty or too small memory.
template <class T>
bool fits(const View<T>& v, std::size_t count) {
  return count > 0 && v.data() != nullptr && count <= v.size();
}

template <class T>
bool overlap(const View<T>& a, const View<T>& b, std::size_t count) {
  const auto* x = reinterpret_cast<const unsigned char*>(a.data());
  const auto* y = reinterpret_cast<const unsigned char*>(b.data());
  const std::size_t bytes = count * sizeof(T);
  return x < y + bytes && y < x + bytes;
}

}  // namespace

Session::Session() {
  semaphores_.emplace_back(0);
  semaphores_.emplace_back(1);
}

Session::~Session() {
  settle();
  for (Queue& queue : queues_) {
    try {
      queue.wait();
    } catch (const Error&) {  // a failed launch's error, or a moved-from queue
    }
  }
  for (const Fence& fence : callbacks_) {
    try {
      fence.wait();
    } catch (const Error&) {
    } catch (const OnPurpose&) {
    }
  }
}

void Session::run(ByteReader& in) {
  for (std::size_t i = 0; i < max_operations && !in.exhausted(); ++i) {
    try {
      apply(in.byte(), in);
    } catch (const Error&) {
      // Rejected misuse is an expected outcome; anything else escapes to the fuzzer.
    }
  }
}

void Session::apply(std::uint8_t operation, ByteReader& in) {
  switch (operation % 26) {
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
    case 11: {
      Command command = pick_handle(in);
      command.named(in.name());
      break;
    }
    case 12: semaphore_op(in); break;
    case 13: submit(in); break;
    case 14: fence_op(in); break;
    case 15: then(in); break;
    case 16: queue_op(in); break;
    case 17: nest(in); break;
    case 18: share(in); break;
    case 19: subview(in); break;
    case 20: overflow_counts(in); break;
    case 21: huge_memory(in); break;
    case 22: update_rerecorded(in); break;
    case 23: destroy(in); break;
    case 24: check_results(in); break;
    default: record_mirrored(in);
  }
}

CommandBuffer& Session::pick_buffer(ByteReader& in) {
  const std::size_t k = in.below(buffers_.size());
  return forced_buffer_ >= 0 ? buffers_[static_cast<std::size_t>(forced_buffer_)] : buffers_[k];
}

View<int> Session::pick_ints(ByteReader& in) {
  const std::size_t k = in.below(6);
  if (k < 3) return pick_view(in, memory_.ints[k]);
  if (k == 3) return memory_.owned[in.below(memory_.owned.size())];
  if (k == 5 && !transients_.empty()) return transients_[in.below(transients_.size())];
  if (memory_.subviews.empty()) return {};
  return memory_.subviews[in.below(memory_.subviews.size())];
}

StoreIndex Session::pick_functor(ByteReader& in) {
  return {memory_.parallel_out.data(), std::min(pick_count(in), large_memory),
          static_cast<int>(in.byte())};
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
  switch (in.below(4)) {
    case 0: remember(cmd.host([this] { host_runs_.fetch_add(1, std::memory_order_relaxed); })); break;
    case 1: remember(cmd.host([] { throw std::runtime_error("host task failed on purpose"); })); break;
    default: {
      // A host task that waits, bounded, on other work (the pool must not deadlock on it).
      const FenceRecord other = pick_fence(in);
      const std::chrono::nanoseconds timeout = pick_timeout(in);
      remember(cmd.host([other, timeout] {
        if (!other.fence.ready()) static_cast<void>(other.fence.wait_for(timeout));
      }));
    }
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
  const std::size_t count = pick_extent<int>(in);
  remember(cmd.copy(dst, src, count), &copies_);
  expect(fits(dst, count) && fits(src, count), "a copy beyond its views was recorded");
  expect(!overlap(dst, src, count), "an overlapping copy was recorded");
}

void Session::record_fill(ByteReader& in) {
  CommandBuffer& cmd = pick_buffer(in);
  if (in.flip()) {
    const View<int> dst = pick_ints(in);
    const std::size_t count = pick_extent<int>(in);
    if (in.below(8) == 0) {
      remember(cmd.fill(dst, std::int64_t{1} << 40, count));  // cannot be held by an int
      violated("a fill value its element cannot hold was recorded");
    }
    remember(cmd.fill(dst, static_cast<int>(in.byte()) - 128, count), &fills_);
    expect(fits(dst, count), "a fill beyond its view was recorded");
  } else {
    const View<std::uint8_t> dst = pick_view(in, memory_.bytes);
    const std::size_t count = pick_extent<std::uint8_t>(in);
    const int value = static_cast<int>(in.byte()) + (in.below(4) == 0 ? 256 : 0);
    remember(cmd.fill(dst, value, count), &byte_fills_);
    expect(value < 256, "a fill of 256 or more into bytes was recorded");
    expect(fits(dst, count), "a fill beyond its view was recorded");
  }
}

void Session::record_other(ByteReader& in) {
  CommandBuffer& cmd = pick_buffer(in);
  switch (in.below(10)) {
    case 0: remember(cmd.barrier()); break;
    case 1: {
      const bool nested = in.flip() && !nested_.empty();
      remember(cmd.execute(nested ? nested_[in.below(nested_.size())] : pick_buffer(in)));
      break;
    }
    case 2: remember(cmd.record(pick_event(in))); break;
    case 3: remember(cmd.wait(pick_event(in))); break;
    case 4: remember(cmd.capture([](NativeStream) {})); break;
    case 5: {
      std::atomic<unsigned>& checks = loop_checks_.emplace_back(0);
      const FirstChecks condition{&checks, static_cast<unsigned>(in.below(4))};
      CommandBuffer& body = pick_buffer(in);
      remember(in.flip() ? cmd.loop_while(body, condition) : cmd.if_then(condition, body));
      break;
    }
    case 6: {
      std::atomic<unsigned>& checks = loop_checks_.emplace_back(0);
      const auto limit = static_cast<unsigned>(in.below(4));
      CommandBuffer& first = pick_buffer(in);
      if (in.flip()) {
        remember(cmd.if_else(FirstChecks{&checks, limit}, first, pick_buffer(in)));
        break;
      }
      // One to four cases (a buffer may be several), now and then none.
      std::vector<std::reference_wrapper<CommandBuffer>> cases{first};
      for (std::size_t k = in.below(4); k > 0; --k) cases.emplace_back(pick_buffer(in));
      if (in.below(8) == 0) cases.clear();
      remember(cmd.switch_on(FirstSelects{&checks, limit}, cases));
      expect(!cases.empty(), "a switch without cases was recorded");
      break;
    }
    case 7: {
      // Transient memory: copies and fills reach it through pick_ints; compile() must refuse
      // any use outside its lifetime or in another buffer.
      const std::size_t count = pick_count(in);
      Transient<int> t = cmd.alloc<int>(count);
      expect(count > 0, "a zero-size allocation was recorded");
      remember(t);
      if (transients_.size() < 16) transients_.push_back(std::move(t));
      break;
    }
    case 8: {
      // Of this buffer or another, freed already or not, or an invalid handle.
      const std::size_t k = in.below(transients_.size() + 1);
      remember(cmd.free(k < transients_.size() ? transients_[k] : Transient<int>()));
      expect(k < transients_.size(), "an invalid transient handle was freed");
      break;
    }
    default: {
      const LaunchConfig config{{static_cast<unsigned>(in.below(2))}, {1}, 0};
      if (in.flip()) {
        remember(cmd.launch(host_only_kernel, config, 1, 2.0), &kernels_);
      } else {
        remember(cmd.launch(host_only_kernel, config, std::int64_t{1} << 40, 2.0), &kernels_);
        violated("a kernel argument its parameter cannot hold was recorded");
      }
    }
  }
}

void Session::record_mirrored(ByteReader& in) {
  // One recording operation on both buffers from the same bytes: they keep one structure (when
  // they started with one), so either re-records the other for update().
  const std::uint8_t operation = in.byte() % 5;
  ByteReader replay = in;
  struct Unforce {
    int& forced;
    ~Unforce() { forced = -1; }
  } unforce{forced_buffer_};
  for (int b = 0; b < 2; ++b) {
    forced_buffer_ = b;
    try {
      apply(operation, b == 0 ? replay : in);
    } catch (const Error&) {
    }
  }
}

void Session::add_edges(ByteReader& in) {
  Command child = pick_handle(in);
  switch (in.below(6)) {
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
    case 3: {
      std::vector<Command> parents;
      for (std::size_t i = in.below(4); i > 0; --i) parents.push_back(pick_handle(in));
      child.after_all(parents);
      break;
    }
    case 4: child.after(pick_handle(in), EdgeKind::programmatic); break;  // kernels only
    default:
      // An out-of-range Priority (3) must be refused; CUDA values are clamped.
      if (in.below(2)) {
        child.priority(static_cast<Priority>(in.below(4)));
      } else {
        child.priority(static_cast<int>(in.below(64)) - 32);
      }
  }
}

void Session::change_buffer(ByteReader& in) {
  CommandBuffer& cmd = pick_buffer(in);
  const std::size_t change = in.below(5);
  // A transient's placeholder lives as long as its recording (or a plan of it): views of one
  // whose buffer ends are dangling, as a view of a destroyed Buffer is.
  if (change < 4) transients_.clear();
  switch (change) {
    case 0: cmd.reset(); break;
    case 1: cmd = CommandBuffer(in.name()); break;
    case 2: {
      const CommandBuffer taken = std::move(cmd);
      break;
    }
    case 3:
      for (CommandBuffer& b : buffers_) b = CommandBuffer(in.name());
      break;
    default: std::swap(buffers_[0], buffers_[1]);
  }
}

void Session::compile_buffer(ByteReader& in) {
  static constexpr Backend backends[] = {Backend::automatic, Backend::host, Backend::cuda_graph,
                                         Backend::streams};
  CommandBuffer& cmd = pick_buffer(in);
  Executable& slot = pick_executable(in);
  CompileOptions options{backends[in.below(4)], static_cast<unsigned>(in.below(5)),
                         in.below(4) == 0};
  // Backend::host runs host-only programs too (host tasks in bodies); the others keep the rules
  // every backend shares, so the fuzzer reaches both.
  options.portable = options.backend != Backend::host;
  std::uint64_t size = 0;
  try {
    size = expanded_size(cmd);
  } catch (const Error&) {  // a moved-from buffer: compile() must refuse it too
  }
  if (size > max_compiled_size) return;
  Executable exe = compile(cmd, Device::host(), options);
  expect(cmd.sealed(), "compile() left its buffer open");
  if (slot) settle();  // replacing it waits for its launches
  slot = std::move(exe);
}

void Session::launch(ByteReader& in) {
  Executable& exe = pick_executable(in);
  Queue& queue = pick_queue(in);
  FenceRecord last;
  for (std::size_t i = in.below(3) + 1; i > 0; --i) {
    last.fence = exe.launch(queue);
    keep_fence(last);
  }
  switch (in.below(4)) {
    case 0: wait_fence_for(last, pick_timeout(in)); break;
    case 1: static_cast<void>(queue.wait_for(pick_timeout(in))); break;
    case 2:
      settle();
      last.fence.wait();
      queue.wait();
      break;
    default: break;
  }
}

void Session::inspect(ByteReader& in) {
  const CommandBuffer& cmd = pick_buffer(in);
  static_cast<void>(cmd.size() + cmd.sealed() + cmd.name().size());
  static_cast<void>(pick_handle(in).name());
  const Executable& exe = pick_executable(in);
  if (!exe) return;
  static_cast<void>(exe.stats().commands + exe.name().size());
  switch (in.below(4)) {
    case 0: {
      Executable copy = exe.clone();
      Executable& slot = pick_executable(in);
      if (slot) settle();
      slot = std::move(copy);
      break;
    }
    case 1: {
      settle();  // a profiled executable's DOT shows its times: it waits for the latest launch
      const char* path = in.flip() ? "/dev/null" : "/dev/full";  // a failed write is an Error
      exe.write_dot(path, DotOptions{in.flip(), in.flip()});
      break;
    }
    case 2: {
      settle();  // last_profile waits for the latest launch
      const Profile profile = exe.last_profile();
      static_cast<void>(profile.trace_json().size());
      break;
    }
    default: exe.write_cuda_dot("/dev/null");
  }
}

}  // namespace cmdgraph::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  cmdgraph::fuzz::ByteReader in(data, size);
  cmdgraph::fuzz::Session session;
  session.run(in);
  return 0;
}

// Huge allocations must come back as Error(out_of_memory), not as ASan's report: let the
// allocator return null (the default of a build without ASan). The environment may add more.
extern "C" const char* __asan_default_options() { return "allocator_may_return_null=1"; }
