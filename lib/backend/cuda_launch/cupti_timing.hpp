// CUPTI profile mode of a CUDA graph: which command each node of the instantiated graph
// times, the state of one traced launch, and its activity records turned into a Profile.
#pragma once

#include "backend/cuda_commands/host_callbacks.hpp"
#include "cuda/cupti_session.hpp"
#include "plan/plan.hpp"

#include <cmdgraph/profile.hpp>

#include <cuda_runtime_api.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace cmdgraph::detail {

inline constexpr std::uint32_t no_timed = ~std::uint32_t{0};

/// One command's run in a launch as CUPTI mode times it (a buffer executed twice runs its
/// commands twice: two each), listed in an order where parents and owners come first.
struct TimedCommand {
  const Plan* plan;
  std::uint32_t command;
  std::uint32_t owner = no_timed;      ///< the executed buffer's run this one belongs to
  std::vector<std::uint32_t> parents;  ///< runs of its parents, in the same run of its plan
  const HostTimes* host = nullptr;     ///< a host task: timed on the host as it runs
  bool expects_record = false;         ///< runs a kernel, copy or fill at every launch
};

/// A node of the built graph whose activity records time TimedCommand `timed`.
struct TimedNode {
  cudaGraphNode_t node;
  std::uint32_t timed;
  bool expects_record;  ///< a kernel, copy or fill node outside any conditional body
};

/// Which TimedCommand the records of each node of an instantiated graph time.
class NodeMap {
 public:
  NodeMap() = default;
  /// `nodes` (with `ids`, their CUPTI ids, one each) as the builder made them, followed through
  /// `clones` (original id, clone id), the clones CUPTI reported while instantiating, in order.
  NodeMap(const std::vector<TimedNode>& nodes, const std::vector<std::uint64_t>& ids,
          const std::vector<std::pair<std::uint64_t, std::uint64_t>>& clones);
  /// The TimedCommand node `id` times, or no_timed.
  std::uint32_t timed_of(std::uint64_t id) const;
  /// What it holds, for reports: nodes registered, clones followed, ids known.
  std::string describe() const;
  /// The CUPTI ids of the nodes the builder made and of their clones (for reports).
  const std::vector<std::uint64_t>& built_ids() const noexcept { return built_; }

 private:
  std::unordered_map<std::uint64_t, std::uint32_t> timed_of_;
  std::vector<std::uint64_t> built_;
  std::size_t clones_ = 0, clones_followed_ = 0;
};

/// What CUPTI mode keeps of a built graph: made by the graph builder, mapped once the graph is
/// instantiated. A launch keeps the one it ran with, so an update does not pull it away.
struct CuptiTiming {
  std::vector<TimedCommand> commands;
  std::deque<HostTimes> host_times;  // the host tasks' (stable addresses)
  std::vector<TimedNode> nodes;      // as built, until mapped
  std::shared_ptr<const NodeMap> map;
  /// What its nodes run, as cuda::cupti::work bits: what a traced launch collects.
  unsigned work = 0;
  /// The launch whose host tasks time themselves, as HostErrors counts launches (~0: none).
  std::atomic<std::uint64_t> host_launch{~std::uint64_t{0}};
};

/// One profiled launch in CUPTI mode, from its enqueue to its reading.
struct CuptiLaunch {
  std::uint64_t index = 0;        ///< the executable's launch number
  std::uint64_t host_launch = 0;  ///< the same as its host tasks count launches
  std::chrono::steady_clock::time_point started, enqueued;
  std::shared_ptr<const CuptiTiming> timing;
  std::shared_ptr<cuda::cupti::LaunchRecords> records =
      std::make_shared<cuda::cupti::LaunchRecords>();
  /// The profile the first read made, which every later read returns: records that arrive
  /// after it (another launch's, given this one's correlation id by CUPTI 13.0) change nothing.
  mutable std::optional<Profile> profile;
};

/// CUPTI's ids of `timing`'s nodes, taken before instantiating (clones refer to them). Throws
/// Error naming `served` when a CUPTI call fails.
std::vector<std::uint64_t> node_ids(const CuptiTiming& timing, cuda::Served served);
/// Maps `timing`'s nodes (`ids`: node_ids) and the clones an instantiation made of them
/// (`clones`, in CUPTI's order: see cuda::cupti::CloneLog) to their commands.
void map_nodes(CuptiTiming& timing, const std::vector<std::uint64_t>& ids,
               const std::vector<std::pair<std::uint64_t, std::uint64_t>>& clones);

/// The Profile of `launch`, of an executable whose top plan is `root`, which has finished on
/// the GPU: flushes CUPTI until a record has reached every command that expects one (at most
/// a few seconds, then forced), then places every command. Throws Error(cuda_error) when CUPTI
/// failed to trace the launch.
Profile read_cupti_profile(const Plan& root, const CuptiLaunch& launch,
                           cuda::cupti::Session& session, const std::string& backend);

/// What the most recent read_cupti_profile found (records, ids matched and not, commands
/// without records), so a test that fails can say what it saw.
std::string last_cupti_report();

}  // namespace cmdgraph::detail
