// to_string(CommandKind): the public name of each kind, from the command table.
#include "command/payloads.hpp"

namespace cmdgraph {

const char* to_string(CommandKind kind) noexcept {
  const auto i = static_cast<std::size_t>(kind);
  // Every name is a string literal, so its data() is NUL-terminated.
  return i < detail::kind_table.size() ? detail::kind_table[i].name.data() : "command";
}

}  // namespace cmdgraph
