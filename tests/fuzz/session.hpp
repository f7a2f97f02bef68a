// Session: one fuzz input's world (command buffers, executables, queues, events, timeline
// semaphores, fences, memory) and the operations its bytes pick, one file per family:
// fuzz_record.cpp (recording, edges, compile, launch), fuzz_sync.cpp (semaphores, submissions,
// fences, events, queues), fuzz_nesting.cpp, fuzz_sizes.cpp, fuzz_updates.cpp.
//
// The rule checked: the library throws cmdgraph::Error and nothing else, never crashes, hangs
// or trips a sanitizer, and valid programs compute what they say (where cheap to check). A
// broken rule that is not a crash stops the fuzzer through violated().
#pragma once

#include "byte_reader.hpp"

#include <cmdgraph/cmdgraph.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

namespace cmdgraph::fuzz {

inline constexpr std::size_t max_operations = 64;
inline constexpr std::size_t large_memory = 1024;  // past one parallel_for chunk (256 indices)
/// Most commands (expanded) the fuzzer compiles: bigger ones cost speed, not coverage; the
/// library's own bounds (64 levels, 10 million commands) are checked when recording.
inline constexpr std::uint64_t max_compiled_size = 4096;
inline constexpr std::size_t max_semaphores = 6;
inline constexpr std::size_t max_fences = 12;

/// Reports a broken rule of the library and aborts, so libFuzzer keeps the input.
[[noreturn]] void violated(const char* rule, const char* detail = "");
inline void expect(bool holds, const char* rule, const char* detail = "") {
  if (!holds) violated(rule, detail);
}

/// Thrown by then() callbacks on purpose: a then() fence rethrows its callback's own
/// exception unchanged (fence.hpp), so this one may come back from waits on such fences.
struct OnPurpose {};

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

void host_only_kernel(int, float);

// A condition that holds for the first `limit` checks of its counter, ever: every loop and
// if ends, however often, however deeply nested and from whichever clone it runs.
struct FirstChecks {
  std::atomic<unsigned>* checks;
  unsigned limit;
  bool operator()() const { return checks->fetch_add(1, std::memory_order_relaxed) < limit; }
};

// A switch's selector: check k (counting from 0) of its counter selects case k for the first
// `limit` checks, ever, then -1 (no case); cases past a switch's own select none too.
struct FirstSelects {
  std::atomic<unsigned>* checks;
  unsigned limit;
  int operator()() const {
    const unsigned k = checks->fetch_add(1, std::memory_order_relaxed);
    return k < limit ? static_cast<int>(k) : -1;
  }
};

// The memory one input's commands read and write. Views into it never claim more than it has.
struct Memory {
  std::array<std::vector<int>, 3> ints{std::vector<int>(1), std::vector<int>(7),
                                       std::vector<int>(large_memory)};
  std::vector<std::uint8_t> bytes = std::vector<std::uint8_t>(large_memory);
  std::vector<int> parallel_out = std::vector<int>(large_memory);
  std::array<Buffer<int>, 3> owned{Buffer<int>(Device::host(), 0), Buffer<int>(Device::host(), 5),
                                   Buffer<int>(Device::host(), large_memory)};
  std::vector<View<int>> subviews;  // subviews of `owned` the library accepted
};

/// A count for a command that may run: mostly small (zero included), now and then up to 4096.
std::size_t pick_count(ByteReader& in);
/// A count for a copy or fill of T (never run beyond its view): as pick_count, and now and
/// then one at the edge where its size in bytes overflows size_t.
template <class T>
std::size_t pick_extent(ByteReader& in) {
  const std::size_t b = in.byte();
  if (b < 232) return b % 26;
  if (b < 248) return (b - 231) * 256;
  constexpr std::size_t edge = static_cast<std::size_t>(-1) / sizeof(T);
  return edge - 2 + (b - 248);  // edge - 2 ... edge + 5, wrapping past SIZE_MAX for bytes
}
/// A timeout for a bounded wait: none, negative, or up to 2 ms.
std::chrono::nanoseconds pick_timeout(ByteReader& in);

/// A fence and whether a then() callback's OnPurpose may come back from it.
struct FenceRecord {
  Fence fence;
  bool raw = false;
};

class Session {
 public:
  Session();
  /// Releases what waits on semaphores nobody will signal, then waits for every queue and
  /// callback: nothing of the input outlives it.
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  void run(ByteReader& in);

 private:
  void apply(std::uint8_t operation, ByteReader& in);

  // fuzz_record.cpp: recording, edges, buffers, compile, launch, inspection.
  CommandBuffer& pick_buffer(ByteReader& in);
  Executable& pick_executable(ByteReader& in) {
    return executables_[in.below(executables_.size())];
  }
  View<int> pick_ints(ByteReader& in);
  Command pick_handle(ByteReader& in);
  template <class Handle>
  Handle pick_typed(ByteReader& in, const std::vector<Handle>& handles) {
    const std::size_t k = in.below(handles.size() + 2);
    if (k < handles.size()) return handles[k];
    Handle moved_from = handles.empty() ? Handle{} : handles.back();
    if (k == handles.size()) return Handle{};
    const Handle taker = std::move(moved_from);
    static_cast<void>(taker);
    return moved_from;
  }
  template <class Handle>
  void remember(const Handle& handle, std::vector<Handle>* typed = nullptr) {
    handles_.push_back(handle);
    if (typed) typed->push_back(handle);
  }
  StoreIndex pick_functor(ByteReader& in);
  void record_host(ByteReader& in);
  void record_parallel_for(ByteReader& in);
  void record_copy(ByteReader& in);
  void record_fill(ByteReader& in);
  void record_other(ByteReader& in);
  void record_mirrored(ByteReader& in);
  void add_edges(ByteReader& in);
  void change_buffer(ByteReader& in);
  void compile_buffer(ByteReader& in);
  void launch(ByteReader& in);
  void inspect(ByteReader& in);

  // fuzz_sync.cpp: semaphores, submissions, fences and callbacks, events, queues.
  Queue& pick_queue(ByteReader& in) { return queues_[in.below(queues_.size())]; }
  Event& pick_event(ByteReader& in) { return events_[in.below(events_.size())]; }
  TimelineSemaphore& pick_semaphore(ByteReader& in);
  SemaphoreValue pick_semaphore_value(ByteReader& in);
  FenceRecord pick_fence(ByteReader& in);
  void keep_fence(const FenceRecord& record);
  void observe_value(const TimelineSemaphore& semaphore);
  void semaphore_op(ByteReader& in);
  void submit(ByteReader& in);
  void fence_op(ByteReader& in);
  void then(ByteReader& in);
  void queue_op(ByteReader& in);
  bool wait_fence_for(const FenceRecord& record, std::chrono::nanoseconds timeout);
  /// Makes every wait submitted so far end (signalling, from the host, what nobody will), so
  /// that a blocking call (a destructor, an unbounded wait) cannot hang on the input's own
  /// deadlock; the library's hangs remain hangs.
  void settle();

  // fuzz_nesting.cpp: chains of executed buffers and conditionals; one secondary, many
  // primaries.
  void nest(ByteReader& in);
  void share(ByteReader& in);

  // fuzz_sizes.cpp: subviews, counts at the overflow edge, buffers too large to exist.
  void subview(ByteReader& in);
  void overflow_counts(ByteReader& in);
  void huge_memory(ByteReader& in);

  // fuzz_updates.cpp: handle and re-recorded updates, clones, destruction, checked programs.
  void update(ByteReader& in);
  void update_rerecorded(ByteReader& in);
  void destroy(ByteReader& in);
  void check_results(ByteReader& in);

  Memory memory_;
  std::deque<std::atomic<unsigned>> loop_checks_;  // one per conditional, at a stable address
  std::atomic<int> host_runs_{0};
  std::vector<TimelineSemaphore> semaphores_;
  std::vector<SemaphoreValue> waits_;     // submitted waits not yet seen reached
  std::vector<SemaphoreValue> observed_;  // the highest value seen of each semaphore
  std::array<Event, 2> events_{Event(Device::host()), Event(Device::host())};
  std::array<Queue, 2> queues_{Queue(Device::host()), Queue(Device::host())};
  std::vector<FenceRecord> fences_;
  std::size_t kept_fences_ = 0;
  std::vector<Fence> callbacks_;  // every then() fence, waited for at the end
  std::array<CommandBuffer, 2> buffers_{CommandBuffer("a"), CommandBuffer("b")};
  std::deque<CommandBuffer> nested_;  // levels of the latest chain, and shared secondaries
  int forced_buffer_ = -1;           // record_mirrored: the buffer every pick returns
  std::array<Executable, 3> executables_;
  std::vector<Command> handles_;
  std::vector<ParallelForCommand<StoreIndex>> parallel_fors_;
  std::vector<CopyCommand<int>> copies_;
  std::vector<FillCommand<int>> fills_;
  std::vector<FillCommand<std::uint8_t>> byte_fills_;
  std::vector<KernelCommand<int, float>> kernels_;
  std::vector<Transient<int>> transients_;  // of any buffer, freed or not
};

}  // namespace cmdgraph::fuzz
