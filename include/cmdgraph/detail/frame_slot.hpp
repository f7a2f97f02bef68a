// FrameSlot: where an ArgumentWriter writes its kernel's parameters with no call into the
// library while its thread holds an update frame, learned from the library's first write in
// the frame and trusted while the executable's frame key is the one it was learned under.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <thread>
#include <utility>

namespace cmdgraph::detail {

/// The generations of an executable's update-free values: a write stages into `staged`, a
/// launch publishes it (lib: DeviceArguments).
struct Generations {
  unsigned long long staged = 0;
  unsigned long long published = 0;
  /// The generation a value written now belongs to.
  unsigned long long stage() noexcept {
    if (staged == published) staged = published + 1;
    return staged;
  }
};

/// What a FrameSlot checks before each write, kept by the executable.
struct FrameWords {
  /// Non-zero while a frame is open and its writes go straight into the update-free values:
  /// then it names where they are, and changes when they may have moved (a new copy of the
  /// values, an update by a re-recorded buffer).
  std::atomic<std::uint64_t> key{0};
  /// The thread holding an update frame open (none: no frame).
  std::atomic<std::thread::id> owner{};
  /// How many transient allocations live in the process: while any does, values are checked.
  const std::atomic<std::size_t>* live_transients = nullptr;
};

/// Where one kernel's parameters go, as the library said when it last wrote them in a frame:
/// its first parameter in the executable's values and the word that marks it changed, trusted
/// while `frame.key` stays `key`. Written and trusted by the frame's thread alone; another
/// thread reads `frame` and `key` only, to see that the frame is not its own.
class FrameSlotBase {
 public:
  /// Filled by the library as it writes through a frame (with each parameter's distance from
  /// the first in the offsets beside it).
  void learn(const FrameWords& frame, std::uint64_t key, std::byte* values,
             Generations& generations, unsigned long long& changed_at) noexcept {
    values_ = values;
    generations_ = &generations;
    changed_at_ = &changed_at;
    key_.store(key, std::memory_order_relaxed);
    frame_.store(&frame, std::memory_order_relaxed);
  }
  /// Whether the calling thread may write through this slot now.
  bool open() const noexcept {
    const FrameWords* frame = frame_.load(std::memory_order_relaxed);
    return frame &&
           frame->key.load(std::memory_order_relaxed) == key_.load(std::memory_order_relaxed) &&
           frame->owner.load(std::memory_order_relaxed) == std::this_thread::get_id() &&
           frame->live_transients->load(std::memory_order_acquire) == 0;
  }

 protected:
  FrameSlotBase() = default;
  FrameSlotBase(const FrameSlotBase& other) noexcept { *this = other; }
  FrameSlotBase& operator=(const FrameSlotBase& other) noexcept {
    frame_.store(other.frame_.load(std::memory_order_relaxed), std::memory_order_relaxed);
    key_.store(other.key_.load(std::memory_order_relaxed), std::memory_order_relaxed);
    values_ = other.values_;
    generations_ = other.generations_;
    changed_at_ = other.changed_at_;
    return *this;
  }
  ~FrameSlotBase() = default;

  std::atomic<const FrameWords*> frame_{nullptr};  // null: never learned
  std::atomic<std::uint64_t> key_{0};
  std::byte* values_ = nullptr;
  Generations* generations_ = nullptr;
  unsigned long long* changed_at_ = nullptr;
};

/// A FrameSlotBase for a kernel of parameters P..., with their offsets.
template <class... P>
class FrameSlot : public FrameSlotBase {
 public:
  /// Writes `args` converted to P... as the kernel's parameters. \pre open().
  template <class... A>
  void write(A&&... args) noexcept {
    write_each(std::index_sequence_for<P...>{}, std::forward<A>(args)...);
    *changed_at_ = generations_->stage();
  }
  /// Each parameter's distance in bytes from the first, for the library to fill.
  std::span<std::uint32_t> offsets() noexcept { return {at_, sizeof...(P)}; }

 private:
  template <std::size_t... I, class... A>
  void write_each(std::index_sequence<I...>, A&&... args) noexcept {
    (put(values_ + at_[I], static_cast<P>(std::forward<A>(args))), ...);
  }
  template <class T>
  static void put(std::byte* to, const T& value) noexcept {
    std::memcpy(to, &value, sizeof(T));
  }

  std::uint32_t at_[sizeof...(P) + 1] = {};  // + 1: a kernel of no parameters
};

}  // namespace cmdgraph::detail
