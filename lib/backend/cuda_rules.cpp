// The rules CUDA devices impose whatever the device, asked of the command table's traits.
#include "backend/cuda_rules.hpp"

#include <cmdgraph/transient.hpp>

namespace cmdgraph::detail {
namespace {

// Where a command sits. A conditional command's body on CUDA is a conditional node's body
// graph; an executed buffer becomes a child graph that CUDA clones, which must not hold a
// conditional node (its handle belongs to the graph it was made in).
struct Within {
  bool conditional = false;
  bool executed = false;
};

std::optional<CudaRuleBreach> breach_in(const Plan& plan, const Plan& root, Within within) {
  for (std::uint32_t c = 0; c < plan.size(); ++c) {
    const KindTraits& t = traits(plan.kind(c));
    if (within.conditional && !t.in_device_loop) {
      return CudaRuleBreach{
          command_label(plan, c, root),
          "the body of a loop, if or switch on a CUDA device holds only kernels, parallel_for, "
          "copies, fills, executed buffers, loops, ifs and switches (a conditional node's body "
          "graph)"};
    }
    if (within.executed && t.conditional) {
      return CudaRuleBreach{
          command_label(plan, c, root),
          t.with_article() + " inside an executed buffer is not supported on CUDA "
          "devices (CUDA cannot clone a conditional node into a child graph); record it in the "
          "buffer that executes it"};
    }
    const Within inner{within.conditional || t.conditional, within.executed || t.expands};
    for (const auto& body : plan.bodies_of(c)) {
      if (auto found = breach_in(*body, root, inner)) return found;
    }
  }
  return std::nullopt;
}

std::optional<CudaRuleBreach> first_outside_device_graphs(const Plan& plan, const Plan& root) {
  for (std::uint32_t c = 0; c < plan.size(); ++c) {
    const KindTraits& t = traits(plan.kind(c));
    if (!t.in_device_loop || !t.in_device_graph) {
      return CudaRuleBreach{command_label(plan, c, root),
                            t.with_article() + " command cannot be in a graph launched from the "
                            "device, which holds only kernels, parallel_for, indirect commands, "
                            "copies, fills and executed buffers of these (CUDA's device graphs "
                            "hold kernel, memcpy, memset and child graph nodes)"};
    }
    for (const auto& body : plan.bodies_of(c)) {
      if (auto found = first_outside_device_graphs(*body, root)) return found;
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<CudaRuleBreach> cuda_structure_breach(const Plan& plan) {
  return breach_in(plan, plan, {});
}

std::optional<CudaRuleBreach> device_graph_breach(const Plan& plan) {
  return first_outside_device_graphs(plan, plan);
}

std::string cuda_memory_breach(CommandKind kind, const MemoryRange& r) {
  if (!traits(kind).pinned_or_device || r.space != MemorySpace::host ||
      r.device == transient_device) {
    return {};
  }
  return "its target is pageable host memory, which a GPU's memory operation cannot reach (use "
         "device memory or a HostBuffer)";
}

}  // namespace cmdgraph::detail
