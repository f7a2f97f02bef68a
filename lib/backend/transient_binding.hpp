// TransientBinding: where one executable placed its plan's transient memory, and the words of
// its own argument store that point there: rewritten once when the memory is placed, again
// for each value update() writes, and for a clone's memory.
#pragma once

#include "plan/plan.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace cmdgraph::detail {

class TransientBinding {
 public:
  /// Binds nothing (a plan without transients).
  TransientBinding() = default;
  /// The transients of `plan` (the root of an executable), none placed yet; the sites are
  /// those of the plan's recorded values.
  explicit TransientBinding(const Plan& plan);

  bool empty() const noexcept { return address_.empty(); }
  /// Transient `t` is at `address`: every word pointing into it in `args` (the store the
  /// plan's values were copied to) now points there.
  void bind(std::uint32_t t, void* address, ArgumentStore& args);
  /// Binds every transient at `arena` plus its layout offset (streams and host backends).
  void bind_arena(const Plan& plan, void* arena, ArgumentStore& args);
  /// Where transient `t` is (null until bound).
  void* address(std::uint32_t t) const noexcept { return address_[t]; }

  /// Before update() writes `bytes` bytes at `data` as a value of command `c` of `plan`:
  /// Error(hazard) if they reach a transient `c` does not run within the lifetime of, or
  /// Error(foreign_handle) if they reach another plan's. `who` names the update.
  void check_value(const Plan& plan, std::uint32_t c, const void* data, std::size_t bytes,
                   const Describe& who) const;
  /// After update() wrote slots [first, first + count) of `args`: finds the words there that
  /// point into transients and rewrites them to where the transients are.
  void rebind_slots(const Plan& plan, ArgumentStore::Slot first, std::uint32_t count,
                    ArgumentStore& args);

 private:
  void write(const TransientSite& site, ArgumentStore& args) const;

  std::vector<void*> address_;       // per transient
  std::vector<TransientSite> sites_;  // by slot and offset
};

}  // namespace cmdgraph::detail
