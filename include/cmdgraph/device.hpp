// Device: where an executable runs, the CPU or one CUDA GPU.
#pragma once

#include <cstddef>
#include <string>

namespace cmdgraph {

/// What a user needs to know about a device to size work for it.
struct DeviceProperties {
  /// The device's name: CUDA's (e.g. "NVIDIA H200"), "host CPU" for the host.
  std::string name;
  int multiprocessors = 0;      ///< SM count; host threads of the pool on the host device
  int compute_major = 0;        ///< compute capability; 0 on the host device
  /// Minor part of the compute capability; 0 on the host device.
  int compute_minor = 0;
  std::size_t total_memory = 0; ///< bytes of device memory; 0 on the host device
  int least_priority = 0;       ///< stream priority range: least urgent ...
  int greatest_priority = 0;    ///< ... most urgent (numerically smaller on CUDA)
};

/// A cheap value naming a device. The host device always exists; CUDA devices exist when the
/// library was built with CUDA and a driver reports them.
class Device {
 public:
  /// The CPU or a CUDA GPU.
  enum class Kind : unsigned char { host, cuda };

  /// The CPU, run by cmdgraph's host backend.
  static Device host() noexcept { return Device(Kind::host, -1); }
  /// CUDA device `ordinal`. Throws Error(no_device) when it does not exist.
  static Device cuda(int ordinal);
  /// Number of CUDA devices visible to this process (0 without CUDA or a driver).
  static int count() noexcept;
  /// The first CUDA device when there is one, else the host.
  static Device best() noexcept;

  /// The CPU or a CUDA GPU.
  Kind kind() const noexcept { return kind_; }
  /// True for Device::host().
  bool is_host() const noexcept { return kind_ == Kind::host; }
  /// True for a CUDA device.
  bool is_cuda() const noexcept { return kind_ == Kind::cuda; }
  /// CUDA ordinal; -1 for the host.
  int ordinal() const noexcept { return ordinal_; }
  /// "host" or "cuda:N".
  std::string name() const;
  /// Name, multiprocessors, compute capability, memory and stream priority range, from CUDA
  /// for a CUDA device; for the host its name and worker-thread count, every other field 0.
  DeviceProperties properties() const;

  /// Equal when kind and ordinal are.
  friend bool operator==(const Device&, const Device&) = default;

 private:
  Device(Kind kind, int ordinal) noexcept : kind_(kind), ordinal_(ordinal) {}
  Kind kind_;
  int ordinal_;
};

}  // namespace cmdgraph
