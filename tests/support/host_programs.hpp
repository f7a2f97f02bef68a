// Small host programs the suites launch: one named host task, compiled for the host device.
#pragma once

#include <cmdgraph/cmdgraph.hpp>

#include <functional>

namespace cmdgraph::testing {

/// An executable of one host task running `body`, the task and its buffer named `name`.
inline Executable host_exe(const char* name, std::function<void()> body) {
  CommandBuffer cmd(name);
  cmd.host(std::move(body)).named(name);
  return compile(cmd, Device::host());
}

}  // namespace cmdgraph::testing
