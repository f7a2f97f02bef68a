// to_string(CommandKind): the public name of each kind, from the command table; the default
// names of commands, made of it.
#include "command/payloads.hpp"

#include <charconv>

namespace cmdgraph {

const char* to_string(CommandKind kind) noexcept {
  const auto i = static_cast<std::size_t>(kind);
  // Every name is a string literal, so its data() is NUL-terminated.
  return i < detail::kind_table.size() ? detail::kind_table[i].name.data() : "command";
}

namespace detail {

std::string default_name(CommandKind kind, std::uint32_t index) {
  const std::string_view kind_name = traits(kind).name;
  char digits[16];
  const auto end = std::to_chars(digits, digits + sizeof digits, index).ptr;
  std::string name;
  name.reserve(kind_name.size() + 1 + static_cast<std::size_t>(end - digits));
  name.append(kind_name).append(1, '#').append(digits, end);
  return name;
}

std::string command_name(const CommandRecord& record, std::uint32_t index) {
  return record.name.empty() ? default_name(kind_of(record.payload), index) : record.name;
}

}  // namespace detail
}  // namespace cmdgraph
