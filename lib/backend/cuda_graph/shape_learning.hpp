// ShapeLearning: a graph executable compiled with GraphShape::automatic() whose commands lack
// costs tries a few shapings of its graph in place of its own launches, timed whole, and keeps
// the one that runs best.
#pragma once

#include "backend/cuda_graph/graph_instance.hpp"
#include "backend/executable_values.hpp"
#include "cuda/handles.hpp"
#include "plan/plan.hpp"
#include "plan/shaping.hpp"
#include "plan/shaping_choice.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace cmdgraph::detail {

/// How learning goes. Only commands' durations tell how many lanes suit a graph, and timing a
/// command inside a graph (event nodes around it) costs more than a short kernel runs; timing
/// a whole launch (two events around it on the stream) costs nothing. So, from launch `from`
/// on, the executable tries candidate shapings: automatic() with every command that lacks a
/// cost assumed to take one of `assumed` (longest first: the most lanes first). Each is built
/// on a thread of its own, then, once uploaded, runs in place of user launches (it does their
/// work): once untimed (a graph's first launch costs more), then each launch timed beside a
/// launch of the plan's graph just before or after it, by turns; the median ratio of `pairs`
/// such pairs is the candidate's, judged by ShapingChoice(`within`), and a candidate one pair
/// finds `reject` beyond the best is judged by that pair. The winner, every value set, takes
/// over at a launch boundary once uploaded.
struct LearningPace {
  std::uint64_t from = 16;
  std::vector<std::chrono::nanoseconds> assumed = {
      std::chrono::microseconds(20), std::chrono::microseconds(5), std::chrono::microseconds(2),
      std::chrono::nanoseconds(500), std::chrono::nanoseconds(0)};
  std::size_t pairs = 4;
  double within = 0.02;
  double reject = 0.25;
};

/// The pace executables compiled from now on learn by. Tests widen `within` and `reject` to
/// make the fewest lanes win whatever the timings say, so that a takeover is exercised on
/// every card; nothing else changes it.
LearningPace& default_learning_pace();

/// Why `plan`, compiled for the graph backend as `shaping` says (with update-free or indirect
/// kernels, for device launch, or profiled, as the flags say), does not learn its shape; empty
/// when it does. Learning needs a second instance beside the one launched, so what ties values
/// or device memory to one instance is not learned: transients, device-updatable nodes
/// (update-free and indirect kernels), graphs for device launch; nor is work a user callable
/// builds while the graph is built (captures, collectives), nor a profiled executable (its
/// profile gives the costs: CommandBuffer::costs_from).
std::string learning_refused(const Plan& plan, const GraphShaping& shaping, bool profiled,
                             bool device_updatable, bool device_launch);

class ShapeLearning {
 public:
  /// Makes an instance of `plan` with `values`, shaped as `shaping` says. Called on a thread
  /// of the learning's own.
  using Make = std::function<Instance(const Plan& plan, ExecutableValues values,
                                      std::shared_ptr<const GraphShaping> shaping)>;
  /// Sets the values root command `c` has now on an instance (a per-node update).
  using Apply = std::function<void(Instance& in, std::uint32_t c)>;

  /// Learning for `plan`; nothing is built before launch `pace.from`.
  ShapeLearning(std::shared_ptr<const Plan> plan, Make make, LearningPace pace = {});
  /// Waits for a build in progress.
  ~ShapeLearning();
  ShapeLearning(const ShapeLearning&) = delete;
  ShapeLearning& operator=(const ShapeLearning&) = delete;

  /// Root command `c` has new values: the candidate built or being built gets them before it
  /// runs.
  void changed(std::uint32_t c);
  /// Ends the builds after an update in place (the same structure, other values): what they
  /// made, to keep until launches in flight end. The next turn builds the candidate again;
  /// the pairs timed so far stand.
  std::vector<std::unique_ptr<Instance>> release();

  /// What launch `index` of `plan` with `values` (the executable's now) does. `instead`: the
  /// candidate to launch instead of the current instance, every value set (null: the current
  /// one); `timed`: time the launch (began() and ended() around it); `shaped`: the winner,
  /// every value set, which takes over from this launch on; `drop`: instances no longer
  /// needed, to keep until launches in flight end. Waits for nothing: it reads builds and
  /// timings only once they are done.
  struct Turn {
    Instance* instead = nullptr;
    bool timed = false;
    std::unique_ptr<Instance> shaped;
    std::vector<std::unique_ptr<Instance>> drop;
  };
  Turn turn(std::uint64_t index, std::shared_ptr<const Plan> plan,
            const ExecutableValues& values, const Apply& apply);
  /// Around a launch turn() asked to time, enqueued on `stream` of `device`.
  void began(cudaStream_t stream, int device);
  void ended(cudaStream_t stream);

  /// True once learning has ended (shaped, kept the plan's graph, or stopped by an error).
  bool done() const noexcept { return phase_ == Phase::done; }
  /// The instance the winner took over from (Turn::shaped), whose launches enqueued on `stream`
  /// of `device` may still run: destroyed on a thread of the learning's once they end.
  void replaced(std::unique_ptr<Instance> in, cudaStream_t stream, int device);
  /// True when nothing runs on the learning's threads: destroying it waits for nothing.
  bool idle() const;
  /// What learning is doing or did, for ExecutableStats::shape_reason.
  const std::string& reason() const noexcept { return reason_; }
  /// Launches timed so far.
  std::size_t timed_launches() const noexcept { return timed_launches_; }

 private:
  enum class Phase { waiting, trying, final_build, done };
  // One candidate shaping, with its instance once built (none when it adds nothing new).
  struct Built {
    std::shared_ptr<const GraphShaping> shaping;
    std::optional<Instance> instance;
  };
  // Starts building candidate `next_` (or, in final_build, the winner) with `values`.
  void start(const ExecutableValues& values);
  // What the build made, once it has finished; ends learning on a failure.
  std::optional<Built> finished_build();
  // Reads the pair timed, once both launches ended; false while they run.
  bool read_pair();
  // turn()'s work, before what learning no longer needs is dropped.
  void advance(Turn& out, std::uint64_t index, const ExecutableValues& values,
               const Apply& apply);
  // Judges the trial by its pairs, and moves on to the next candidate or finishes.
  void judge(Turn& out, const ExecutableValues& values, const Apply& apply);
  // Ends trying: the winner is handed over (or built first), or the plan's graph stays.
  void finish(Turn& out, const ExecutableValues& values, const Apply& apply);
  // The winner's instance, every value set, takes over.
  void hand_over(Turn& out, const Apply& apply);
  void stop(std::string why);

  std::shared_ptr<const Plan> plan_;
  Make make_;
  LearningPace pace_;
  Phase phase_ = Phase::waiting;
  std::string reason_;
  std::future<Built> build_;
  std::size_t next_ = 0;  // the candidate tried (index into pace_.assumed)
  std::uint32_t last_lanes_ = 0;  // the lanes of the last candidate built
  std::unique_ptr<Instance> trial_;  // candidate next_, built
  std::shared_ptr<const GraphShaping> trial_shaping_;
  bool trial_warm_ = false;  // the trial's first launch (untimed) was made
  ShapingChoice choice_;
  std::shared_ptr<const GraphShaping> winner_;  // choice_'s winner (null: the plan's graph)
  std::unique_ptr<Instance> winner_instance_;   // the trial judged last, or built again
  std::vector<double> ratios_;                  // of the trial's pairs
  std::vector<std::string> seen_;               // "N lanes: ratio" per candidate judged
  // Instances no longer wanted (candidates judged, the one the winner replaced), destroyed on
  // a thread of the learning's once `ends` has (none: their launches have ended): destroying
  // an instance takes milliseconds, part of them holding a lock of CUDA's that launches wait
  // for (bench_instantiate_stall). Left here only when no thread could be had.
  struct Spent {
    std::unique_ptr<Instance> instance;
    cuda::Event ends;
  };
  std::vector<Spent> spent_;
  std::future<void> reaping_;
  static void bury(std::vector<Spent>& spent);
  // Destroys `in` (and what no thread could be had for before) on a task of its own, after the
  // reaping before it, once `ends` has.
  void spend(std::unique_ptr<Instance> in, cuda::Event ends = {});
  // A pair: two launches in a row (a, then b), the trial's and the plan graph's.
  cuda::Event a_start_, a_end_, b_start_, b_end_;
  int pair_ = 0;  // launches of the pair enqueued: 0, 1 (a) or 2 (a and b)
  bool trial_first_ = true;  // the trial's launch is a
  std::size_t timed_launches_ = 0;
  // Commands with values an instance lacks: the build's or trial's, and the winner's.
  struct Stale {
    std::vector<std::uint32_t> commands;
    std::vector<char> is_stale;
    void add(std::uint32_t c);
    void apply(Instance& in, const Apply& apply);
  };
  Stale stale_, winner_stale_;
};

}  // namespace cmdgraph::detail
