// The value hooks of the kinds: recording hooks check a command's values and store them
// (through the recording's RecordSite); update hooks check new values by the same rules,
// write them and apply them (through the executable's UpdateSite).
#include "command/payloads.hpp"
#include "command/record_site.hpp"
#include "command/update_site.hpp"
#include "command/value_rules.hpp"

#include <cmdgraph/error.hpp>

#include <algorithm>
#include <stdexcept>
#include <typeinfo>

namespace cmdgraph::detail {
namespace {

// The values a kind's recording call or handle hands over; another type is the library's
// own mistake.
template <class V>
const V& values_as(const CommandValues& values) {
  if (const V* v = values.as<V>()) return *v;
  throw std::logic_error("cmdgraph: a command was handed values of another kind");
}

// A typed handle whose type is not the one the command was recorded with (a handle made from
// another command's reference): its values would not fit the recorded ones.
std::string recorded_type_problem(const std::type_info* recorded, const std::type_info& handle,
                                  const char* what) {
  if (recorded && *recorded == handle) return {};
  return std::string("the handle's ") + what + " is not the one the command was recorded " +
         "with (a handle of another command's type)";
}

// A typed copy or fill handle of another element type than the command recorded.
std::string element_size_problem(std::size_t recorded, std::size_t handle) {
  if (recorded == handle) return {};
  return "the handle's element type (" + std::to_string(handle) +
         " bytes) is not the one the command was recorded with (" + std::to_string(recorded) +
         " bytes)";
}

}  // namespace

void KernelPayload::update(UpdateSite& site, const CommandValues& values) const {
  if (const LaunchConfig* new_config = values.as<LaunchConfig>()) {
    site.require(problem_with(*new_config));
    site.write(config, new_config);
    site.apply();
    return;
  }
  const auto& arguments = values_as<KernelArguments>(values);
  site.require(recorded_type_problem(signature, *arguments.signature, "kernel signature"));
  const auto written = static_cast<std::uint32_t>(std::min<std::size_t>(arguments.count,
                                                                        param_count));
  for (std::uint32_t i = 0; i < written; ++i) {
    site.require_transient_fit(arguments.params[i].value, arguments.params[i].size);
  }
  for (std::uint32_t i = 0; i < written; ++i) site.write(first_param + i, arguments.params[i].value);
  site.apply();
}

void ParallelForPayload::update(UpdateSite& site, const CommandValues& values) const {
  const auto& v = values_as<ParallelForValues>(values);
  site.require(recorded_type_problem(type, *v.type, "functor type"));
  if (v.count && *v.count == 0) site.require("zero-size range");
  site.require_transient_fit(v.functor.value, v.functor.size);
  site.write(functor, v.functor.value);
  if (v.count) site.write(count(), v.count);
  site.apply();
}

CopyPayload CopyPayload::record(RecordSite& site, const CommandValues& values) {
  const auto& copy = values_as<CopySpec>(values);
  site.require(problem_with(copy));
  return {site.values().add_value(copy)};
}

void CopyPayload::update(UpdateSite& site, const CommandValues& values) const {
  const auto& copy = values_as<CopySpec>(values);
  const auto& recorded = site.values().get<CopySpec>(spec);
  site.require(element_size_problem(recorded.dst.element_size, copy.dst.element_size));
  site.require(problem_with(copy));
  site.require_reachable(copy.dst);
  site.require_reachable(copy.src);
  site.require_access({access_of(copy.src, AccessMode::read),
                       access_of(copy.dst, AccessMode::write)});
  site.require_transient_fit(&copy, sizeof copy);
  site.write(spec, &copy);
  site.apply();
}

FillPayload FillPayload::record(RecordSite& site, const CommandValues& values) {
  const auto& fill = values_as<FillSpec>(values);
  site.require(problem_with(fill));
  return {site.values().add_value(fill)};
}

void FillPayload::update(UpdateSite& site, const CommandValues& values) const {
  const auto& fill = values_as<FillSpec>(values);
  const auto& recorded = site.values().get<FillSpec>(spec);
  site.require(element_size_problem(recorded.element_size, fill.element_size));
  site.require(problem_with(fill));
  site.require_reachable(fill.dst);
  site.require_access({access_of(fill.dst, AccessMode::write)});
  site.require_transient_fit(&fill, sizeof fill);
  site.write(spec, &fill);
  site.apply();
}

ValueOp ValueOp::recorded(RecordSite& site, const CommandValues& values, bool waits) {
  const auto& v = values_as<ValueSpec>(values);
  site.require(problem_with(v));
  if (v.waits != waits) throw std::logic_error("cmdgraph: a memory operation of another kind");
  return {site.values().add_value(v)};
}

void ValueOp::update(UpdateSite& site, const CommandValues& values) const {
  const auto& recorded = site.values().get<ValueSpec>(spec);
  ValueSpec v = values_as<ValueSpec>(values);
  v.waits = recorded.waits;
  v.compare = recorded.compare;
  site.require(element_size_problem(recorded.target.element_size, v.target.element_size));
  site.require(problem_with(v));
  site.require_reachable(v.target);
  site.require_access({access_of(v.target, v.waits ? AccessMode::read : AccessMode::write)});
  site.require_transient_fit(&v, sizeof v);
  site.write(spec, &v);
  site.apply();
}

void CollectivePayload::update(UpdateSite& site, const CommandValues& values) const {
  const auto& v = values_as<CollectiveSpec>(values);
  const auto& before = site.values().get<CollectiveSpec>(spec);
  if (before.op == CollectiveOp::exchange) {
    site.require("an exchange's transfers change by re-recording its buffer");
  }
  CollectiveSpec collective = before;
  collective.send = v.send;
  collective.recv = v.recv;
  collective.count = v.count;
  site.require(prepare(collective, ranks, rank, device));
  site.require_reachable(collective.send);
  site.require_reachable(collective.recv);
  site.require_access({access_of(collective.send, AccessMode::read),
                       access_of(collective.recv, AccessMode::write)});
  site.write(spec, &collective);
  try {
    site.apply();
  } catch (const Error& e) {
    // The NCCL call is captured anew: CUDA refusing the new graph refuses the update.
    if (e.code() != errc::cuda_error) throw;
    site.refuse(e.what(), e.cuda_status());
  }
}

}  // namespace cmdgraph::detail
