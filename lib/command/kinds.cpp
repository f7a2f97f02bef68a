// to_string(CommandKind): the public name of each kind, from the command table; the default
// names of commands, made of it.
#include "command/command_record.hpp"
#include "command/payloads.hpp"

#include <cstring>

namespace cmdgraph {

const char* to_string(CommandKind kind) noexcept {
  const auto i = static_cast<std::size_t>(kind);
  // Every name is a string literal, so its data() is NUL-terminated.
  return i < detail::kind_table.size() ? detail::kind_table[i].name.data() : "command";
}

namespace detail {
namespace {

// The digits of `index` in decimal.
std::size_t digits_of(std::uint32_t index) noexcept {
  std::size_t digits = 1;
  for (std::uint64_t bound = 10; index >= bound && digits < 10; bound *= 10) ++digits;
  return digits;
}

std::size_t default_name_size(CommandKind kind, std::uint32_t index) noexcept {
  return traits(kind).name.size() + 1 + digits_of(index);
}

char* write_default_name(char* out, CommandKind kind, std::uint32_t index) noexcept {
  const std::string_view name = traits(kind).name;
  std::memcpy(out, name.data(), name.size());
  out += name.size();
  *out++ = '#';
  char* const end = out + digits_of(index);
  for (char* at = end; at != out; index /= 10) *--at = static_cast<char>('0' + index % 10);
  return end;
}

}  // namespace

std::size_t command_name_size(const CommandRecord& record, std::uint32_t index) noexcept {
  return record.name.empty() ? default_name_size(kind_of(record.payload), index)
                             : record.name.size();
}

char* write_command_name(char* out, const CommandRecord& record, std::uint32_t index) noexcept {
  if (record.name.empty()) return write_default_name(out, kind_of(record.payload), index);
  std::memcpy(out, record.name.data(), record.name.size());
  return out + record.name.size();
}

std::string default_name(CommandKind kind, std::uint32_t index) {
  std::string name(default_name_size(kind, index), '\0');
  write_default_name(name.data(), kind, index);
  return name;
}

std::string command_name(const CommandRecord& record, std::uint32_t index) {
  return record.name.empty() ? default_name(kind_of(record.payload), index) : record.name;
}

}  // namespace detail
}  // namespace cmdgraph
