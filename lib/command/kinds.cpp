// to_string(CommandKind): the public name of each kind, from the command table; the default
// names of commands, made of it.
#include "command/payloads.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>

namespace cmdgraph {

const char* to_string(CommandKind kind) noexcept {
  const auto i = static_cast<std::size_t>(kind);
  // Every name is a string literal, so its data() is NUL-terminated.
  return i < detail::kind_table.size() ? detail::kind_table[i].name.data() : "command";
}

namespace detail {

namespace {

// Room for the longest kind name, '#' and an index's ten digits.
constexpr std::size_t longest_default_name = 48;
static_assert(std::ranges::all_of(kind_table, [](const KindTraits& t) {
  return t.name.size() + 1 + 10 <= longest_default_name;
}));

// Written whole, then appended at once: labelling a frame's tasks makes many of them.
void append_default_name(std::string& out, CommandKind kind, std::uint32_t index) {
  const std::string_view name = traits(kind).name;
  char text[longest_default_name];
  std::memcpy(text, name.data(), name.size());
  text[name.size()] = '#';
  const auto end = std::to_chars(text + name.size() + 1, text + sizeof text, index).ptr;
  out.append(text, end);
}

}  // namespace

std::string default_name(CommandKind kind, std::uint32_t index) {
  std::string name;
  append_default_name(name, kind, index);
  return name;
}

std::string command_name(const CommandRecord& record, std::uint32_t index) {
  return record.name.empty() ? default_name(kind_of(record.payload), index) : record.name;
}

void append_command_name(std::string& out, const CommandRecord& record, std::uint32_t index) {
  if (record.name.empty()) {
    append_default_name(out, kind_of(record.payload), index);
  } else {
    out += record.name;
  }
}

}  // namespace detail
}  // namespace cmdgraph
