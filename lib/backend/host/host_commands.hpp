// What each kind of command is on the host backend: whether it can run there, and how it runs.
// One overload per kind in host_commands.cpp, reached through std::visit: a kind without one
// does not compile.
#pragma once

#include "command/payloads.hpp"

#include <cmdgraph/error.hpp>

#include <cstdint>
#include <string>

namespace cmdgraph::detail {

class HostLaunch;

/// Why a command cannot run on the host; code ok when it can.
struct HostRefusal {
  errc code = errc::ok;
  std::string why;
  explicit operator bool() const noexcept { return code != errc::ok; }
};
/// Whether `payload` can run on the host with the values in `args` (its body not included).
HostRefusal host_refusal(const Payload& payload, const ArgumentStore& args);
/// Whether the CPU can reach memory `r`.
HostRefusal host_memory_refusal(const MemoryRange& r);

/// How running a command went: finished, failed (its dependants are skipped), or handed to
/// another thread that resumes the launch when it is done.
enum class HostOutcome { ok, failed, deferred };

/// Runs `payload`, task `task` of `launch`, with the values in `args`.
HostOutcome run_on_host(const Payload& payload, HostLaunch& launch, std::uint32_t task,
                        const ArgumentStore& args);

}  // namespace cmdgraph::detail
