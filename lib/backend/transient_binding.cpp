// TransientBinding: rewriting the words of an argument store that point into transients.
#include "backend/transient_binding.hpp"

#include <algorithm>
#include <cstring>

namespace cmdgraph::detail {

TransientBinding::TransientBinding(const Plan& plan)
    : address_(plan.memory.list.size(), nullptr), sites_(plan.memory.sites) {}

void TransientBinding::write(const TransientSite& site, ArgumentStore& args) const {
  const auto word = reinterpret_cast<std::uintptr_t>(address_[site.transient]) + site.delta;
  std::memcpy(static_cast<unsigned char*>(args.data(site.slot)) + site.offset, &word,
              sizeof(word));
}

void TransientBinding::bind(std::uint32_t t, void* address, ArgumentStore& args) {
  address_[t] = address;
  for (const TransientSite& site : sites_) {
    if (site.transient == t) write(site, args);
  }
}

void TransientBinding::bind_arena(const Plan& plan, void* arena, ArgumentStore& args) {
  for (std::uint32_t t = 0; t < address_.size(); ++t) {
    address_[t] = static_cast<unsigned char*>(arena) + plan.memory.list[t].offset;
  }
  for (const TransientSite& site : sites_) write(site, args);
}

void TransientBinding::check_value(const Plan& plan, std::uint32_t c, const void* data,
                                   std::size_t bytes, const Describe& who) const {
  for (const std::uint32_t t : transients_reached(plan.memory, data, bytes, who)) {
    require_within_lifetime(plan, c, t, who);
  }
}

void TransientBinding::rebind_slots(const Plan& plan, ArgumentStore::Slot first,
                                    std::uint32_t count, ArgumentStore& args) {
  if (empty()) return;
  // Checked by check_value before the values were written: nothing here refuses them.
  std::vector<TransientSite> found =
      find_sites(plan.memory, args, first, count, [] { return std::string("an update"); });
  const auto in_range = [&](const TransientSite& s) {
    return s.slot >= first && s.slot < first + count;
  };
  std::erase_if(sites_, in_range);
  for (const TransientSite& site : found) write(site, args);
  const auto at = std::lower_bound(sites_.begin(), sites_.end(), first,
                                   [](const TransientSite& s, ArgumentStore::Slot slot) {
                                     return s.slot < slot;
                                   });
  sites_.insert(at, found.begin(), found.end());
}

}  // namespace cmdgraph::detail
