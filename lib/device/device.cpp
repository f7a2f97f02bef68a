// Device: the host device and, when built with CUDA, the devices the driver reports.
#include <cmdgraph/device.hpp>
#include <cmdgraph/error.hpp>

#include "device/host_work.hpp"

#if CMDGRAPH_HAVE_CUDA
#include "cuda/runtime.hpp"
#endif

namespace cmdgraph {

int Device::count() noexcept {
#if CMDGRAPH_HAVE_CUDA
  return detail::cuda::device_count();
#else
  return 0;
#endif
}

Device Device::cuda(int ordinal) {
  const int n = count();
  if (ordinal < 0 || ordinal >= n) {
    throw Error(errc::no_device, "there is no CUDA device " + std::to_string(ordinal) + " (" +
                                     std::to_string(n) + " visible" +
                                     (CMDGRAPH_HAVE_CUDA ? "" : "; built without CUDA") + ")");
  }
  return Device(Kind::cuda, ordinal);
}

Device Device::best() noexcept { return count() > 0 ? Device(Kind::cuda, 0) : host(); }

std::string Device::name() const {
  return is_host() ? "host" : "cuda:" + std::to_string(ordinal_);
}

DeviceProperties Device::properties() const {
  if (is_host()) {
    DeviceProperties p;
    p.name = "host CPU";
    p.multiprocessors = static_cast<int>(detail::host_threads());
    return p;
  }
#if CMDGRAPH_HAVE_CUDA
  const detail::cuda::DeviceFacts f = detail::cuda::facts(ordinal_);
  return {f.name, f.multiprocessors, f.compute_major, f.compute_minor, f.total_memory,
          f.least_priority, f.greatest_priority};
#else
  return {};
#endif
}

}  // namespace cmdgraph
