// Sizes: subviews near and past the end and near SIZE_MAX; copy and fill counts, views and
// buffers whose sizes in bytes overflow size_t; queue pools too large or asked for a priority
// that is none. Each must be taken exactly when it fits, and refused with an Error otherwise.
#include "session.hpp"

#include <limits>

namespace cmdgraph::fuzz {
namespace {

constexpr std::size_t size_max = std::numeric_limits<std::size_t>::max();

// An offset or count near the ends of `size` elements and of size_t.
std::size_t pick_edge(ByteReader& in, std::size_t size) {
  switch (in.below(10)) {
    case 0: return 0;
    case 1: return 1;
    case 2: return size == 0 ? 0 : size - 1;
    case 3: return size;
    case 4: return size + 1;
    case 5: return size / 2;
    case 6: return size_max - in.below(2);
    case 7: return size_max - size + in.below(2);
    case 8: return size_max / 2 + 1;
    default: return in.below(size + 2);
  }
}

bool within(std::size_t size, std::size_t offset, std::size_t count) {
  return offset <= size && count <= size - offset;
}

// Records a copy or fill of `count` elements of T (kept in a buffer that never runs).
template <class T>
void record_at_edge(CommandBuffer& scratch, ByteReader& in, std::vector<T>& a, std::vector<T>& b) {
  const std::size_t count = pick_extent<T>(in);
  const View<T> dst = host_view(a.data(), a.size());
  const View<T> src = host_view(b.data(), b.size());
  const bool fits = count > 0 && count <= a.size();
  try {
    if constexpr (sizeof(T) <= 4) {
      if (in.flip()) {
        scratch.fill(dst, T{1}, count);
      } else {
        scratch.copy(dst, src, count);
      }
    } else {
      scratch.copy(dst, src, count);
    }
  } catch (const Error& e) {
    expect(e.code() == errc::invalid_argument, "a count beyond its view: not invalid_argument");
    expect(!fits, "a count within its view was refused", e.what());
    return;
  }
  expect(fits, "a count beyond its view was recorded");
}

// A view of `size` elements of T at `data` (never used: it may claim more than there is).
template <class T>
void view_at_edge(ByteReader& in, T* data) {
  const std::size_t size = pick_extent<T>(in);
  const bool overflows = size > size_max / sizeof(T);
  try {
    const View<T> v = host_view(data, size);
    expect(v.size_bytes() == size * sizeof(T), "a view's size in bytes is wrong");
  } catch (const Error& e) {
    expect(overflows && e.code() == errc::invalid_argument, "a view was refused wrongly");
    return;
  }
  expect(!overflows, "a view whose bytes overflow was made");
}

// A Buffer or HostBuffer of T too large to exist, or whose bytes overflow.
template <class T>
void allocate_at_edge(ByteReader& in) {
  constexpr std::size_t edge = size_max / sizeof(T);
  const std::size_t sizes[] = {edge - 1, edge, edge + 1, edge + 2, (std::size_t{1} << 62) + 1,
                               (std::size_t{1} << 45) / sizeof(T) + in.below(3), in.below(3)};
  const std::size_t size = sizes[in.below(std::size(sizes))];
  const bool overflows = size > edge;
  try {
    if (in.flip()) {
      const HostBuffer<T> buffer(size);
      expect(buffer.size() == size && (size == 0 || buffer.data()), "a HostBuffer is wrong");
    } else {
      const Buffer<T> buffer(Device::host(), size);
      expect(buffer.size() == size && (size == 0 || buffer.data()), "a Buffer is wrong");
    }
  } catch (const Error& e) {
    expect(e.code() == (overflows ? errc::invalid_argument : errc::out_of_memory),
           "a buffer too large was refused with the wrong code", e.what());
    return;
  }
  expect(!overflows, "a buffer whose bytes overflow was allocated");
}

}  // namespace

void Session::subview(ByteReader& in) {
  const bool from_buffer = in.flip();
  const Buffer<int>& buffer = memory_.owned[in.below(memory_.owned.size())];
  const View<int> base = from_buffer ? buffer.view() : pick_ints(in);
  const std::size_t offset = pick_edge(in, base.size());
  const std::size_t count = pick_edge(in, base.size());
  View<int> part;
  try {
    part = from_buffer ? buffer.subview(offset, count) : base.subview(offset, count);
  } catch (const Error& e) {
    expect(e.code() == errc::invalid_argument, "a subview refusal is not invalid_argument");
    expect(!within(base.size(), offset, count), "a subview within bounds was refused");
    return;
  }
  expect(within(base.size(), offset, count), "a subview past the end was taken");
  const int* start = base.data() ? base.data() + offset : nullptr;
  expect(part.data() == start && part.size() == count,
         "a subview is not the range asked for");
  if (memory_.subviews.size() < 16) memory_.subviews.push_back(part);
  // A command right at its end: one element short, exact, one past.
  const std::size_t length = part.size() + in.below(3) - 1;
  CommandBuffer& cmd = pick_buffer(in);
  if (in.flip()) {
    remember(cmd.fill(part, 3, length), &fills_);
    expect(length > 0 && length <= part.size() && part.data(), "a fill past a subview was taken");
  } else {
    const View<int> other = pick_ints(in);
    remember(cmd.copy(other, part, length), &copies_);
    expect(length > 0 && length <= part.size() && length <= other.size(),
           "a copy past a subview was taken");
  }
}

void Session::overflow_counts(ByteReader& in) {
  CommandBuffer scratch("edges");
  std::vector<std::uint8_t> bytes(8), more_bytes(8);
  std::vector<std::uint16_t> shorts(8), more_shorts(8);
  std::vector<int> ints(8), more_ints(8);
  std::vector<double> doubles(8), more_doubles(8);
  for (std::size_t n = 1 + in.below(4); n > 0; --n) {
    switch (in.below(8)) {
      case 0: record_at_edge(scratch, in, bytes, more_bytes); break;
      case 1: record_at_edge(scratch, in, shorts, more_shorts); break;
      case 2: record_at_edge(scratch, in, ints, more_ints); break;
      case 3: record_at_edge(scratch, in, doubles, more_doubles); break;
      case 4: view_at_edge(in, bytes.data()); break;
      case 5: view_at_edge(in, ints.data()); break;
      case 6: view_at_edge(in, doubles.data()); break;
      default: view_at_edge(in, shorts.data());
    }
  }
}

void Session::huge_memory(ByteReader& in) {
  switch (in.below(4)) {
    case 0: allocate_at_edge<std::uint8_t>(in); break;
    case 1: allocate_at_edge<int>(in); break;
    case 2: allocate_at_edge<double>(in); break;
    default: {
      static constexpr std::size_t sizes[] = {0, 1, 2, QueuePool::max_queues_per_priority,
                                              QueuePool::max_queues_per_priority + 1, size_max};
      const std::size_t per_priority = sizes[in.below(std::size(sizes))];
      const auto priority = static_cast<Priority>(in.below(5));
      const bool valid = per_priority >= 1 && per_priority <= QueuePool::max_queues_per_priority;
      try {
        QueuePool pool(Device::host(), per_priority);
        expect(valid, "a queue pool of a wrong size was made");
        const bool known = static_cast<unsigned>(priority) < 3;
        try {
          static_cast<void>(pool.acquire(priority));
        } catch (const Error& e) {
          expect(!known && e.code() == errc::invalid_argument, "acquire refused wrongly");
          return;
        }
        expect(known, "acquire took a priority that is none");
      } catch (const Error& e) {
        expect(!valid && e.code() == errc::invalid_argument, "a queue pool was refused wrongly");
      }
    }
  }
}

}  // namespace cmdgraph::fuzz
