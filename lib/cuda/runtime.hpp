// Device queries and memory through the checked door.
#pragma once

#include <cmdgraph/device.hpp>

#include <cstddef>
#include <utility>

namespace cmdgraph::detail::cuda {

/// Devices the driver reports; 0 when there is no driver or device (the error is cleared).
int device_count() noexcept;
DeviceProperties properties(int device);
/// The device's stream priority range: least urgent, most urgent.
std::pair<int, int> priority_range(int device);

void* allocate_device(int device, std::size_t bytes);
void free_device(int device, void* p) noexcept;
void* allocate_pinned(std::size_t bytes);
void free_pinned(void* p) noexcept;

}  // namespace cmdgraph::detail::cuda
