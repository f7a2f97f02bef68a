// A recorded command: its payload (the command table's), its own name and how it asked to run
// beside what it does; and the names commands go by.
#pragma once

#include "command/argument_store.hpp"
#include "command/payloads.hpp"

#include <cmdgraph/command.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace cmdgraph::detail {

/// How a command asked to run, beside what it does.
struct RunHints {
  std::optional<PriorityRequest> priority;  // priority(); its kernels' and its bodies'
  bool programmatic_safe = false;  // a kernel that waits for its parents itself: edges into
                                   // it from kernels are programmatic
  std::optional<std::chrono::nanoseconds> cost;  // cost(), costs_from(): for graph shaping
  bool update_free = false;  // a kernel whose arguments its node takes on the device at each
                             // launch (KernelCommand::update_free)
  bool operator==(const RunHints&) const = default;
};

/// One recorded command: what it does and its name.
struct CommandRecord {
  Payload payload;
  std::string name;  // its own; empty for the default "kind#index", made only when asked for
                     // (command_name), so recording a command allocates no name
  RunHints hints;
  ArgumentStore::Slot slots_end = 0;  // its values are the slots from the previous command's
                                      // slots_end to this one
};

/// The name of `record`, command `index` of its recording: its own, or "kind#index".
std::string command_name(const CommandRecord& record, std::uint32_t index);
/// The default name of command `index` of kind `kind`: "kind#index".
std::string default_name(CommandKind kind, std::uint32_t index);
/// The characters of command_name(record, index), and that name written at `out` (no NUL)
/// returning its end: for writing many names with no string of their own.
std::size_t command_name_size(const CommandRecord& record, std::uint32_t index) noexcept;
char* write_command_name(char* out, const CommandRecord& record, std::uint32_t index) noexcept;

}  // namespace cmdgraph::detail
