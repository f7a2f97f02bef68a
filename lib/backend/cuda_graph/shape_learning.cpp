// ShapeLearning: candidate shapings built on a thread of their own, each timed whole beside
// the current graph's launches, read without waiting; the winner handed over.
#include "backend/cuda_graph/shape_learning.hpp"

#include "cuda/stream_ops.hpp"
#include "plan/shaping_choice.hpp"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <system_error>
#include <utility>

namespace cmdgraph::detail {
namespace {

// Whether `plan` or a body of it has a command of a kind learning leaves alone.
bool holds_unlearned_kind(const Plan& plan, std::string& which) {
  for (std::uint32_t c = 0; c < plan.size(); ++c) {
    const KindTraits& kind = traits(plan.kind(c));
    if (kind.captured) {
      which = "command '" + plan.name(c) + "' is " + kind.with_article() +
              ", which a second build would capture again";
      return true;
    }
    for (const auto& body : plan.bodies_of(c)) {
      if (holds_unlearned_kind(*body, which)) return true;
    }
  }
  return false;
}

// "117 lanes 0.812x, 38 lanes 0.805x".
std::string joined(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& part : parts) out += (out.empty() ? "" : ", ") + part;
  return out;
}

// Whether the upload instantiate() started for `in` has ended: a launch before would wait
// for it on the device.
bool uploaded(const Instance& in) {
  return !in.uploaded || cuda::query_event(in.uploaded.get()) != cudaErrorNotReady;
}

std::string ratio(double r) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3fx", r);
  return text;
}

}  // namespace

LearningPace& default_learning_pace() {
  static LearningPace pace;
  return pace;
}

std::string learning_refused(const Plan& plan, const GraphShaping& shaping, bool profiled,
                             bool device_updatable, bool device_launch) {
  if (!shaping.wants_costs) return "nothing to learn";
  if (profiled) return "profiled: its profile gives the costs (CommandBuffer::costs_from)";
  if (device_launch) return "compiled for device launch";
  if (device_updatable) return "update-free or indirect kernels are bound to one instance";
  if (!plan.memory.list.empty()) return "transient memory is placed by one instance";
  std::string which;
  if (holds_unlearned_kind(plan, which)) return which;
  return {};
}

ShapeLearning::ShapeLearning(std::shared_ptr<const Plan> plan, Make make, LearningPace pace)
    : plan_(std::move(plan)), make_(std::move(make)), pace_(std::move(pace)),
      choice_(pace_.within) {
  reason_ = "automatic: learning the shape: from launch " + std::to_string(pace_.from) +
            " on, shapings for commands assumed shorter and shorter run in place of launches, "
            "timed beside the plan's graph; its edges stand until then";
}

void ShapeLearning::bury(std::vector<Spent>& spent) {
  for (Spent& s : spent) {
    // An error here is the launch's, which its own fence reports.
    if (s.ends) (void)cuda::synchronize_event(s.ends.get());
    s.instance.reset();
  }
  spent.clear();
}

ShapeLearning::~ShapeLearning() {
  if (build_.valid()) build_.wait();
  if (reaping_.valid()) reaping_.wait();
  bury(spent_);  // what found no thread to be destroyed on
}

void ShapeLearning::replaced(std::unique_ptr<Instance> in, cudaStream_t stream, int device) {
  spent_.reserve(spent_.size() + 1);  // so that spend()'s push cannot fail after the record
  cuda::Event ends;
  try {
    ends = cuda::create_event(device, false, cuda::no_command);
    cuda::record_event(ends.get(), stream, cuda::no_command);
  } catch (const std::exception&) {
    // No event to wait for: its launches end here instead. A fault is theirs to report.
    (void)cuda::synchronize_stream(stream);
    ends = {};
  }
  spend(std::move(in), std::move(ends));
}

void ShapeLearning::spend(std::unique_ptr<Instance> in, cuda::Event ends) {
  spent_.push_back({std::move(in), std::move(ends)});
  auto spent = std::make_shared<std::vector<Spent>>(std::move(spent_));
  try {
    reaping_ = std::async(std::launch::async, [before = std::move(reaping_), spent]() {
      if (before.valid()) before.wait();
      bury(*spent);
    });
  } catch (const std::system_error&) {
    spent_ = std::move(*spent);  // no thread: destroyed with the learning
  }
}

bool ShapeLearning::idle() const {
  const auto running = [](const auto& task) {
    return task.valid() &&
           task.wait_for(std::chrono::seconds(0)) != std::future_status::ready;
  };
  return !running(build_) && !running(reaping_);
}

void ShapeLearning::start(const ExecutableValues& values) {
  stale_ = {};  // the build takes `values`, every change so far
  std::shared_ptr<const GraphShaping> winner = phase_ == Phase::final_build ? winner_ : nullptr;
  try {
    build_ = std::async(std::launch::async, [make = make_, plan = plan_, values, winner,
                                             assumed = pace_.assumed[std::min(
                                                 next_, pace_.assumed.size() - 1)],
                                             last = last_lanes_]() -> Built {
      if (winner) return {winner, make(*plan, values, winner)};
      const std::vector<std::chrono::nanoseconds> measured(plan->size(), assumed);
      auto shaping = std::make_shared<const GraphShaping>(
          shape_graph(*plan, GraphShape::automatic(), measured));
      if (!shaping->shaped() || shaping->lanes == last) return {shaping, std::nullopt};
      return {shaping, make(*plan, values, shaping)};
    });
  } catch (const std::system_error& e) {
    stop(std::string("no thread to build on: ") + e.what());
  }
}

void ShapeLearning::changed(std::uint32_t c) {
  if (build_.valid() || trial_) stale_.add(c);
  if (winner_instance_) winner_stale_.add(c);
}

std::vector<std::unique_ptr<Instance>> ShapeLearning::release() {
  std::vector<std::unique_ptr<Instance>> drop;
  if (build_.valid()) {
    try {
      Built built = build_.get();
      if (built.instance) drop.push_back(std::make_unique<Instance>(std::move(*built.instance)));
    } catch (const std::exception&) {
      // Built from values no longer current: what failed is built again, or never needed.
    }
  }
  if (trial_) drop.push_back(std::move(trial_));
  if (winner_instance_) drop.push_back(std::move(winner_instance_));
  stale_ = {};
  winner_stale_ = {};
  pair_ = 0;  // a pair begun times an instance dropped
  return drop;
}

ShapeLearning::Turn ShapeLearning::turn(std::uint64_t index, std::shared_ptr<const Plan> plan,
                                        const ExecutableValues& values, const Apply& apply) {
  Turn out;
  plan_ = std::move(plan);  // an update in place may have brought another of the structure
  if (phase_ != Phase::done) advance(out, index, values, apply);
  if (phase_ == Phase::done) {
    if (trial_) out.drop.push_back(std::move(trial_));
    if (winner_instance_) out.drop.push_back(std::move(winner_instance_));
  }
  return out;
}

void ShapeLearning::advance(Turn& out, std::uint64_t index, const ExecutableValues& values,
                            const Apply& apply) {
  if (phase_ == Phase::waiting) {
    if (index < pace_.from) return;  // an executable launched less often never pays
    phase_ = Phase::trying;
  }
  if (phase_ == Phase::final_build && winner_instance_) {
    if (uploaded(*winner_instance_)) hand_over(out, apply);
    return;
  }
  if (!build_.valid() && !trial_) start(values);  // the first, or again after release()
  if (std::optional<Built> built = finished_build()) {
    if (phase_ == Phase::final_build) {
      winner_instance_ = std::make_unique<Instance>(std::move(*built->instance));
      winner_stale_ = std::move(stale_);
      return;  // handed over once uploaded
    }
    if (built->shaping->shaped()) last_lanes_ = built->shaping->lanes;
    if (!built->instance) {  // nothing new to try: the next candidate
      if (++next_ < pace_.assumed.size()) start(values);
      else finish(out, values, apply);
      return;
    }
    trial_ = std::make_unique<Instance>(std::move(*built->instance));
    trial_shaping_ = std::move(built->shaping);
    trial_warm_ = false;
  }
  if (phase_ != Phase::trying || !trial_ || !uploaded(*trial_)) return;
  if (!trial_warm_) {
    // A graph's first launch costs more than the next: not timed.
    stale_.apply(*trial_, apply);
    out.instead = trial_.get();
    trial_warm_ = true;
    return;
  }
  if (pair_ == 2) {
    if (!read_pair()) return;  // the pair still runs
    if (ratios_.size() >= pace_.pairs || choice_.hopeless(ratios_.back(), pace_.reject)) {
      judge(out, values, apply);
      return;
    }
  }
  // Pairs take turns at which runs first: the first of two launches may wait for its own
  // enqueue, the second's was made while the first ran.
  if (pair_ == 0) trial_first_ = ratios_.size() % 2 == 0;
  if ((pair_ == 0) == trial_first_) {
    stale_.apply(*trial_, apply);
    out.instead = trial_.get();
  }
  out.timed = true;
  ++pair_;
}

void ShapeLearning::began(cudaStream_t stream, int device) {
  cuda::Event& start = pair_ == 1 ? a_start_ : b_start_;
  cuda::Event& end = pair_ == 1 ? a_end_ : b_end_;
  if (!start) start = cuda::create_event(device, true, cuda::no_command);
  if (!end) end = cuda::create_event(device, true, cuda::no_command);
  cuda::record_event(start.get(), stream, cuda::no_command);
}

void ShapeLearning::ended(cudaStream_t stream) {
  cuda::record_event((pair_ == 1 ? a_end_ : b_end_).get(), stream, cuda::no_command);
  ++timed_launches_;
}

std::optional<ShapeLearning::Built> ShapeLearning::finished_build() {
  if (!build_.valid() ||
      build_.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
    return std::nullopt;
  }
  try {
    return build_.get();
  } catch (const std::exception& e) {
    stop(std::string("building a shaped instance failed: ") + e.what());
    return std::nullopt;
  }
}

bool ShapeLearning::read_pair() {
  const cudaError_t status = cuda::query_event(b_end_.get());
  if (status == cudaErrorNotReady) return false;
  pair_ = 0;
  if (status != cudaSuccess) {
    // The launch's own fence reports the fault; learning only stops.
    stop("a timed launch failed: " + cuda::describe(status));
    return false;
  }
  const double first = cuda::elapsed_ms(a_start_.get(), a_end_.get(), cuda::no_command);
  const double second = cuda::elapsed_ms(b_start_.get(), b_end_.get(), cuda::no_command);
  const double trial = trial_first_ ? first : second, plans = trial_first_ ? second : first;
  ratios_.push_back(plans > 0 ? trial / plans : 1.0);
  return true;
}

void ShapeLearning::judge(Turn& out, const ExecutableValues& values, const Apply& apply) {
  const double r = median_ratio(ratios_);
  ratios_.clear();
  seen_.push_back(std::to_string(trial_shaping_->lanes) + " lanes " + ratio(r));
  if (!choice_.judge(next_, r)) {
    spend(std::move(trial_));  // its last pair was read: none of it runs
    finish(out, values, apply);
    return;
  }
  winner_ = std::move(trial_shaping_);
  if (winner_instance_) spend(std::move(winner_instance_));  // likewise
  winner_instance_ = std::move(trial_);
  winner_stale_ = std::move(stale_);
  if (++next_ < pace_.assumed.size()) start(values);
  else finish(out, values, apply);
}

void ShapeLearning::finish(Turn& out, const ExecutableValues& values, const Apply& apply) {
  const std::string timed = std::to_string(timed_launches_) + " timed launches";
  if (!winner_) {
    phase_ = Phase::done;
    reason_ = seen_.empty() ? "automatic: learned that no shaping adds a lane edge"
                            : "automatic: learned from " + timed + " that the plan's graph "
                              "runs best (replay against it: " + joined(seen_) + ")";
    return;
  }
  const std::string automatic = "automatic: ";
  const std::string& shaped = winner_->reason;
  reason_ = "automatic, learned from " + timed + " (replay against the plan's graph: " +
            joined(seen_) + "): " +
            (shaped.starts_with(automatic) ? shaped.substr(automatic.size()) : shaped);
  if (winner_instance_) {
    hand_over(out, apply);
  } else {
    phase_ = Phase::final_build;  // its instance was dropped by an update: again
    start(values);
  }
}

void ShapeLearning::hand_over(Turn& out, const Apply& apply) {
  winner_stale_.apply(*winner_instance_, apply);
  out.shaped = std::move(winner_instance_);
  phase_ = Phase::done;
}

void ShapeLearning::stop(std::string why) {
  phase_ = Phase::done;
  reason_ = "automatic: learning stopped (" + why + "), so the plan's edges stand";
}

void ShapeLearning::Stale::add(std::uint32_t c) {
  if (c >= is_stale.size()) is_stale.resize(c + 1, 0);
  if (is_stale[c]) return;
  is_stale[c] = 1;
  commands.push_back(c);
}

void ShapeLearning::Stale::apply(Instance& in, const Apply& apply) {
  for (const std::uint32_t c : commands) {
    apply(in, c);
    is_stale[c] = 0;
  }
  commands.clear();
}

}  // namespace cmdgraph::detail
