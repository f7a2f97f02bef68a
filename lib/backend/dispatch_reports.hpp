// DispatchReports: what the dispatchers of an executable's indirect commands tell the host,
// one report per command (bodies included), in memory the device writes and the host reads.
#pragma once

#include "plan/plan.hpp"

#include <cmdgraph/executable.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace cmdgraph::detail {

/// One command's report, as the dispatcher kernels write it (lib/cuda/dispatch.cu takes its
/// address as two unsigned long long): runs clamped, most asked.
/// \note The layout is the dispatchers' contract: two 64-bit words, in this order.
struct DispatchReport {
  std::uint64_t clamped = 0;
  std::uint64_t largest = 0;
};
static_assert(sizeof(DispatchReport) == 2 * sizeof(unsigned long long) &&
              sizeof(std::uint64_t) == sizeof(unsigned long long));

/// Whether `plan` holds an indirect command, in its bodies too.
bool sized_on_device(const Plan& plan);

class DispatchReports {
 public:
  /// Memory for `bytes` bytes both the executing device and the host reach.
  using Allocate = std::function<std::shared_ptr<void>(std::size_t bytes)>;
  /// A zeroed report for every indirect command of `root` (bodies included); allocates
  /// nothing when it has none.
  DispatchReports(const Plan& root, const Allocate& allocate);

  /// The report of command `c` of `plan` (root or one of its bodies), an indirect command.
  DispatchReport* at(const Plan& plan, std::uint32_t c) const;
  /// Counts a run on the host: it asked for `asked`, more than its limit when `clamped`.
  void note(const Plan& plan, std::uint32_t c, std::uint64_t asked, bool clamped) const;
  /// The commands clamped so far.
  std::vector<ClampedDispatch> clamped() const;
  /// True when the plan has no indirect command (and nothing was allocated).
  bool empty() const noexcept { return names_.empty(); }

 private:
  void index(const Plan& plan, const Plan& root);

  std::shared_ptr<void> memory_;
  std::map<std::pair<const Plan*, std::uint32_t>, std::size_t> slot_;
  std::vector<std::string> names_;
};

}  // namespace cmdgraph::detail
