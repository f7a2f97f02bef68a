// Event: a marker recorded by one command and waited on by another, across queues.
#pragma once

#include <cmdgraph/device.hpp>

#include <memory>

namespace cmdgraph {

namespace detail {
class EventState;
}

/// A device-bound synchronisation marker (cudaEvent_t on CUDA). `record(event)` marks a point;
/// `wait(event)` orders later work after the most recent record that has executed.
/// Move-only; recordings and executables that use it keep its state alive.
class Event {
 public:
  explicit Event(Device device = Device::best());
  Event(Event&&) noexcept = default;
  Event& operator=(Event&&) noexcept = default;
  ~Event() = default;

  Device device() const noexcept;
  const std::shared_ptr<detail::EventState>& state() const noexcept { return state_; }

 private:
  std::shared_ptr<detail::EventState> state_;
};

}  // namespace cmdgraph
