// structural_difference: command by command, then edge by edge.
#include "plan/compare.hpp"

#include <algorithm>

namespace cmdgraph::detail {
namespace {

const void* code_of(const RecordedCommand& c) {
  if (const auto* k = std::get_if<KernelPayload>(&c.payload)) return k->function;
  if (const auto* p = std::get_if<ParallelForPayload>(&c.payload)) return p->device_kernel;
  return nullptr;
}

Difference difference_in(const Plan& before, const Plan& now, const Plan& root) {
  if (before.size() != now.size()) {
    return {"command buffer '" + now.recording->name() + "' has " + std::to_string(now.size()) +
                " commands, the executable " + std::to_string(before.size()),
            {}};
  }
  for (std::uint32_t c = 0; c < now.size(); ++c) {
    const RecordedCommand& a = before.command(c);
    const RecordedCommand& b = now.command(c);
    const std::string name = command_label(now, c, root);
    auto differs = [&](const std::string& how) {
      return Difference{"command '" + name + "' " + how, name};
    };
    if (a.kind != b.kind) {
      return differs(std::string("is a ") + to_string(b.kind) + ", was a " + to_string(a.kind));
    }
    if (code_of(a) != code_of(b)) return differs("runs a different kernel");
    const auto ka = before.children[c], kb = now.children[c];
    if (!std::equal(ka.begin(), ka.end(), kb.begin(), kb.end())) {
      return differs("has different dependants");
    }
    if (before.nested[c]) {
      if (Difference inner = difference_in(*before.nested[c], *now.nested[c], root)) return inner;
    }
  }
  return {};
}

}  // namespace

Difference structural_difference(const Plan& before, const Plan& now) {
  return difference_in(before, now, now);
}

}  // namespace cmdgraph::detail
