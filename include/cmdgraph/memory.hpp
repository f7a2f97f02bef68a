// Memory owners (Buffer, HostBuffer) and the non-owning View that commands take.
#pragma once

#include <cmdgraph/device.hpp>
#include <cmdgraph/error.hpp>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <type_traits>
#include <utility>

namespace cmdgraph {

/// Where a range of memory lives; decides how copies and fills are carried out.
enum class MemorySpace : unsigned char {
  host,    ///< pageable host memory (new, malloc, std::vector, the host device's Buffer)
  pinned,  ///< page-locked host memory (HostBuffer with CUDA), reachable by DMA
  device,  ///< memory of one CUDA device
};

namespace detail {
void* allocate(MemorySpace space, int device, std::size_t bytes);
void deallocate(MemorySpace space, int device, void* p) noexcept;
MemorySpace pinned_or_host() noexcept;  // pinned where CUDA works, host otherwise

/// `count` elements of `element_size` bytes in bytes; Error(invalid_argument) naming `what`
/// when that does not fit in size_t.
inline std::size_t checked_bytes(std::size_t count, std::size_t element_size, const char* what) {
  if (element_size != 0 && count > std::numeric_limits<std::size_t>::max() / element_size) {
    throw Error(errc::invalid_argument, std::string(what) + " of " + std::to_string(count) +
                                            " elements of " + std::to_string(element_size) +
                                            " bytes is larger than any memory (the size in bytes "
                                            "overflows size_t)");
  }
  return count * element_size;
}

/// Error(invalid_argument) naming `what` when `bytes` from `data` run past the top of the
/// address space: such a range wraps to low addresses, and no memory could hold it.
inline void check_range_end(const void* data, std::size_t bytes, const char* what) {
  const auto start = reinterpret_cast<std::uintptr_t>(data);
  if (bytes > std::numeric_limits<std::uintptr_t>::max() - start) {
    throw Error(errc::invalid_argument, std::string(what) + " of " + std::to_string(bytes) +
                                            " bytes at address " + std::to_string(start) +
                                            " runs past the top of the address space");
  }
}
}  // namespace detail

/// A non-owning typed range: pointer, element count, memory space and device ordinal
/// (-1 for host memory). Cheap to copy; the memory must outlive every launch that uses it.
/// Throws Error(invalid_argument) when `size` elements do not fit in size_t bytes, or when
/// they would run past the top of the address space.
template <class T>
class View {
 public:
  View() = default;
  /// `size` elements at `data` in `space`, on CUDA device `device` (-1 for host memory).
  /// \pre The memory is where `space` and `device` say; nothing checks it. Throws
  /// Error(invalid_argument) when `size` elements do not fit in size_t bytes, or when they
  /// would run past the top of the address space (the range would wrap).
  View(T* data, std::size_t size, MemorySpace space, int device)
      : data_(data), origin_(data), size_(size), space_(space), device_(device) {
    detail::check_range_end(data, detail::checked_bytes(size, sizeof(T), "a view"), "a view");
  }
  /// A view of const T from a view of T.
  template <class U>
    requires(std::is_same_v<const U, T> && !std::is_const_v<U>)
  View(const View<U>& other) noexcept
      : data_(other.data()), origin_(other.origin()), size_(other.size()), space_(other.space()),
        device_(other.device_ordinal()) {}

  /// The first element.
  T* data() const noexcept { return data_; }
  /// Number of elements.
  std::size_t size() const noexcept { return size_; }
  /// size() * sizeof(T).
  std::size_t size_bytes() const noexcept { return size_ * sizeof(T); }
  /// The first element of the view this one was cut from by subview() (data() unless it is a
  /// subview): errors about declared access give element ranges from there.
  T* origin() const noexcept { return origin_; }
  /// Where the memory lives.
  MemorySpace space() const noexcept { return space_; }
  /// The CUDA device of device memory; -1 for host and pinned memory.
  int device_ordinal() const noexcept { return device_; }
  /// True unless it is device memory: the host may read and write it directly.
  bool host_accessible() const noexcept { return space_ != MemorySpace::device; }

  /// Elements [offset, offset + count). Throws Error(invalid_argument) unless
  /// offset + count <= size(). A subview of a null view is null (commands refuse it).
  View subview(std::size_t offset, std::size_t count) const {
    if (offset > size_ || count > size_ - offset) {
      throw Error(errc::invalid_argument, "subview(" + std::to_string(offset) + ", " +
                                              std::to_string(count) + ") of a view of " +
                                              std::to_string(size_) + " elements");
    }
    View part(data_ ? data_ + offset : nullptr, count, space_, device_);
    part.origin_ = origin_;
    return part;
  }

 private:
  T* data_ = nullptr;
  T* origin_ = nullptr;
  std::size_t size_ = 0;
  MemorySpace space_ = MemorySpace::host;
  int device_ = -1;
};

/// A view of ordinary (pageable) host memory.
template <class T>
View<T> host_view(T* data, std::size_t size) {
  return View<T>(data, size, MemorySpace::host, -1);
}
/// A view of the pageable host memory `s` spans.
template <class T>
View<T> host_view(std::span<T> s) {
  return host_view(s.data(), s.size());
}
/// A view of memory the caller allocated on a CUDA device (cudaMalloc or a library's pool).
template <class T>
View<T> device_view(T* data, std::size_t size, Device device) {
  return View<T>(data, size, MemorySpace::device, device.ordinal());
}

namespace detail {
/// Shared body of Buffer and HostBuffer: one typed allocation, move-only.
template <class T>
class OwnedMemory {
  static_assert(std::is_trivially_copyable_v<T>, "cmdgraph memory holds trivially copyable types");

 public:
  OwnedMemory() = default;
  /// Throws Error(invalid_argument) when `size` elements do not fit in size_t bytes.
  OwnedMemory(MemorySpace space, int device, std::size_t size)
      : data_(static_cast<T*>(allocate(space, device, checked_bytes(size, sizeof(T), "a buffer")))),
        size_(size), space_(space), device_(device) {}
  OwnedMemory(OwnedMemory&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)),
        space_(o.space_), device_(o.device_) {}
  OwnedMemory& operator=(OwnedMemory&& o) noexcept {
    if (this != &o) {
      release();
      data_ = std::exchange(o.data_, nullptr);
      size_ = std::exchange(o.size_, 0);
      space_ = o.space_;
      device_ = o.device_;
    }
    return *this;
  }
  ~OwnedMemory() { release(); }

  T* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  std::size_t size_bytes() const noexcept { return size_ * sizeof(T); }
  MemorySpace space() const noexcept { return space_; }
  View<T> view() const noexcept { return View<T>(data_, size_, space_, device_); }
  operator View<T>() const noexcept { return view(); }
  operator View<const T>() const noexcept { return view(); }
  /// Elements [offset, offset + count); Error(invalid_argument) beyond size().
  View<T> subview(std::size_t offset, std::size_t count) const {
    return view().subview(offset, count);
  }

 protected:
  int device_ordinal() const noexcept { return device_; }

 private:
  void release() noexcept {
    if (data_) deallocate(space_, device_, data_);
    data_ = nullptr;
  }
  T* data_ = nullptr;
  std::size_t size_ = 0;
  MemorySpace space_ = MemorySpace::host;
  int device_ = -1;
};
}  // namespace detail

/// Memory of one device: cudaMalloc on a CUDA device, aligned host memory on the host device.
/// Contents start undefined. Freeing never frees under the device: cudaFree synchronises a
/// CUDA device; host memory is released once every launch submitted to a host queue before
/// the free has finished (at once when none is in flight; the destructor never waits, so it
/// may come before the host signals what such a launch waits for, or inside a host task).
template <class T>
class Buffer : public detail::OwnedMemory<T> {
 public:
  Buffer() = default;
  /// `size` elements on `device`. Throws Error(out_of_memory) when the allocation fails or
  /// exceeds what the machine could back (host memory: its RAM and swap, whatever the kernel
  /// would overcommit), or Error(cuda_error).
  Buffer(Device device, std::size_t size)
      : detail::OwnedMemory<T>(device.is_host() ? MemorySpace::host : MemorySpace::device,
                               device.ordinal(), size) {}
  /// The device the memory belongs to.
  Device device() const {
    return this->device_ordinal() < 0 ? Device::host() : Device::cuda(this->device_ordinal());
  }
};

/// Host memory for staging: pinned (cudaMallocHost) when CUDA works, so copies are true DMA
/// and can overlap compute; plain aligned memory otherwise. Contents start undefined.
/// Freeing is deferred behind the host device's launches, as Buffer's is.
template <class T>
class HostBuffer : public detail::OwnedMemory<T> {
 public:
  HostBuffer() = default;
  /// `size` elements. Throws Error(out_of_memory) when the allocation fails or exceeds what
  /// the machine could back (pinned memory: its RAM; plain memory: RAM and swap), or
  /// Error(cuda_error).
  explicit HostBuffer(std::size_t size)
      : detail::OwnedMemory<T>(detail::pinned_or_host(), -1, size) {}

  /// Element `i`. \pre `i` < size().
  T& operator[](std::size_t i) const noexcept { return this->data()[i]; }
  /// The first element, for range-for.
  T* begin() const noexcept { return this->data(); }
  /// One past the last element.
  T* end() const noexcept { return this->data() + this->size(); }
  /// The elements as a span.
  std::span<T> span() const noexcept { return {this->data(), this->size()}; }
};

}  // namespace cmdgraph
