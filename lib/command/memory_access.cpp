// MemoryAccess: how it is described in errors and DOT, and the access copies, fills and
// collectives imply.
#include "command/memory_access.hpp"

#include "command/payloads.hpp"

#include <cstdio>
#include <variant>

namespace cmdgraph::detail {
namespace {

std::string address(std::uintptr_t p) {
  char text[2 + 2 * sizeof(p) + 1];
  std::snprintf(text, sizeof(text), "0x%jx", static_cast<std::uintmax_t>(p));
  return text;
}

}  // namespace

MemoryAccess access_of(const MemoryRange& range, AccessMode mode) {
  const auto begin = reinterpret_cast<std::uintptr_t>(range.data);
  return {.begin = begin,
          .end = begin + range.bytes,
          .origin = reinterpret_cast<std::uintptr_t>(range.origin ? range.origin : range.data),
          .element_size = static_cast<std::uint32_t>(range.element_size ? range.element_size : 1),
          .mode = mode,
          .label = nullptr};
}

std::string MemoryAccess::name() const { return label ? *label : address(origin); }

std::string MemoryAccess::describe() const { return describe(begin, end); }

std::string MemoryAccess::describe(std::uintptr_t from, std::uintptr_t to) const {
  const std::uintptr_t first = (from - origin) / element_size;
  const std::uintptr_t last = (to - origin + element_size - 1) / element_size;
  return name() + "[" + std::to_string(first) + ", " +
         std::to_string(last) + ")";
}

const std::string* LabelStore::keep(std::string_view text) {
  if (const auto it = kept_.find(text); it != kept_.end()) return it->second;
  const std::string& kept = labels_.emplace_back(text);
  kept_.emplace(kept, &kept);
  return &kept;
}

const char* verb(AccessMode mode) noexcept {
  switch (mode) {
    case AccessMode::read: return "reads";
    case AccessMode::write: return "writes";
    case AccessMode::read_write: break;
  }
  return "reads and writes";
}

void CopyPayload::implied_access(const ArgumentStore& values, std::vector<MemoryAccess>& out) const {
  const auto& copy = values.get<CopySpec>(spec);
  out.push_back(access_of(copy.src, AccessMode::read));
  out.push_back(access_of(copy.dst, AccessMode::write));
}

void FillPayload::implied_access(const ArgumentStore& values, std::vector<MemoryAccess>& out) const {
  out.push_back(access_of(values.get<FillSpec>(spec).dst, AccessMode::write));
}

void ValueOp::implied_access(const ArgumentStore& values, std::vector<MemoryAccess>& out) const {
  const auto& v = values.get<ValueSpec>(spec);
  out.push_back(access_of(v.target, v.waits ? AccessMode::read : AccessMode::write));
}

void IndirectPayload::implied_access(const ArgumentStore& values,
                                     std::vector<MemoryAccess>& out) const {
  out.push_back(access_of(values.get<IndirectSpec>(spec).source, AccessMode::read));
}

void CollectivePayload::implied_access(const ArgumentStore& values,
                                       std::vector<MemoryAccess>& out) const {
  const auto& c = values.get<CollectiveSpec>(spec);
  if (c.op != CollectiveOp::exchange) {
    out.push_back(access_of(c.send, AccessMode::read));
    out.push_back(access_of(c.recv, AccessMode::write));
    return;
  }
  for (std::size_t i = 0; i < c.count; ++i) {
    const auto& t = values.get<TransferSpec>(transfer(i));
    out.push_back(access_of(t.memory, t.sends ? AccessMode::read : AccessMode::write));
  }
}

namespace {
MemoryAccess whole(const TransientRange& range, AccessMode mode, TransientRole role) {
  return {.begin = range.base(),
          .end = range.base() + range.bytes(),
          .origin = range.base(),
          .element_size = range.element_size(),
          .mode = mode,
          .role = role};
}
}  // namespace

MemoryAccess transient_use(const TransientRange& range) {
  return whole(range, AccessMode::read, TransientRole::use);
}

void AllocPayload::implied_access(const ArgumentStore&, std::vector<MemoryAccess>& out) const {
  out.push_back(whole(*memory, AccessMode::write, TransientRole::allocation));
}

void FreePayload::implied_access(const ArgumentStore&, std::vector<MemoryAccess>& out) const {
  out.push_back(whole(*memory, AccessMode::write, TransientRole::release));
}

void add_implied_access(const Payload& payload, const ArgumentStore& values,
                        std::vector<MemoryAccess>& out) {
  std::visit(
      [&](const auto& p) {
        if constexpr (requires { p.implied_access(values, out); }) p.implied_access(values, out);
      },
      payload);
}

}  // namespace cmdgraph::detail
