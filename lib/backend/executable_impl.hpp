// ExecutableImpl: what every backend's compiled form gives the Executable face above it, and
// the skeleton the three backends share: the plan and stats, the recorded events, update by a
// re-recorded buffer (check, compare, refuse or take), the profile guard.
#pragma once

#include "backend/transient_binding.hpp"
#include "command/argument_store.hpp"
#include "plan/compare.hpp"
#include "plan/new_values.hpp"
#include "plan/plan.hpp"

#include <cmdgraph/detail/frame_slot.hpp>
#include <cmdgraph/executable.hpp>
#include <cmdgraph/fence.hpp>

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace cmdgraph::detail {

class EventState;
class QueueState;

/// What a frame write teaches a writer's slot (FrameSlotBase::learn): the frame's words and
/// key, and where the slot's offsets go.
struct SlotLesson {
  FrameSlotBase& slot;
  std::span<std::uint32_t> offsets;
  const FrameWords& frame;
  std::uint64_t key;
};

/// Where an open update frame writes kernel arguments with no check but the frame's
/// (ExecutableImpl::frame_writes): a backend's update-free kernels, in its own values.
class FrameWrites {
 public:
  /// Writes `arguments` as root command `c`'s, as ExecutableImpl::write_arguments does, and
  /// teaches `lesson`'s slot (when given) where they went; false, with nothing written or
  /// taught, when they take write_arguments' path instead.
  virtual bool frame_write(std::uint32_t c, const KernelArguments& arguments,
                           const SlotLesson* lesson) = 0;

 protected:
  ~FrameWrites() = default;
};

class ExecutableImpl {
 public:
  /// `stats.profile_mode` says how launches are timed; one in `profile_every` is.
  ExecutableImpl(std::shared_ptr<const Plan> plan, Device device, ExecutableStats stats,
                 unsigned profile_every);
  virtual ~ExecutableImpl() { *alive_ = false; }
  ExecutableImpl(const ExecutableImpl&) = delete;
  ExecutableImpl& operator=(const ExecutableImpl&) = delete;

  /// Enqueues one run on `queue` (of this executable's device), after this executable's
  /// previous run and `info`'s waits; `info`'s signals follow the run, before its fence
  /// signals. `info` is validated.
  virtual Fence launch(const std::shared_ptr<QueueState>& queue, const SubmitInfo& info) = 0;
  virtual std::unique_ptr<ExecutableImpl> clone() const = 0;

  /// The values update() writes into; launches from now on use them, a launch in flight
  /// keeps the values it started with.
  virtual ArgumentStore& arguments_for_update() = 0;
  /// The values launches from now on use, read without taking them for writing.
  virtual const ArgumentStore& current_values() const = 0;
  /// Makes the values of root command `c` (an updatable kind), already written, take effect.
  virtual void apply_update(std::uint32_t c) = 0;
  /// Writes `arguments` as kernel command `c`'s and makes them take effect, for the cost of a
  /// copy, when the backend hands them to the device itself (update-free kernels); false,
  /// with nothing written, when they take update()'s path. Under Updating.
  virtual bool write_arguments(std::uint32_t c, const KernelArguments& arguments) {
    (void)c;
    (void)arguments;
    return false;
  }
  /// Throws, naming root command `c`, unless this executable's device can reach `r`.
  virtual void check_memory(std::uint32_t c, const MemoryRange& r) const = 0;
  /// Before update() writes `bytes` bytes at `data` as a value of root command `c`: throws,
  /// naming `who`, when they reach transient memory `c` does not run within the lifetime of,
  /// or transient memory of another command buffer.
  void check_transient_value(std::uint32_t c, const void* data, std::size_t bytes,
                             const Describe& who) const {
    transients_.check_value(*plan_, c, data, bytes, who);
  }
  /// After update() wrote slots [first, first + count) of arguments_for_update(): their words
  /// pointing into transients now point where this executable placed them.
  void rebind_transients(ArgumentStore::Slot first, std::uint32_t count) {
    if (!transients_.empty()) transients_.rebind_slots(*plan_, first, count, arguments_for_update());
  }

  /// Takes a re-recorded plan: refuses it (naming the command) when this backend cannot run
  /// it, or when its structure differs and `options` do not allow a rebuild; else takes it in
  /// place (when only values changed, command by command as updates by handle do), or
  /// rebuilds.
  UpdateResult update_from(std::shared_ptr<const Plan> plan, const UpdateOptions& options);
  /// Takes the plan plan_of_new_values made of this executable's plan (the same commands,
  /// edges and access; new values at any depth), as update_from does one of its structure,
  /// with nothing analysed again.
  UpdateResult update_values_from(NewValues values, const UpdateOptions& options);

  /// The timings of the most recent launch, waiting for it; Error(wrong_state) when not
  /// profiling or never launched.
  Profile last_profile() const;
  /// The indirect commands clamped so far (Executable::clamped_dispatches).
  virtual std::vector<ClampedDispatch> clamped_dispatches() const { return {}; }
  /// The stream or lane of each root command, where the backend has lanes.
  virtual std::vector<unsigned> command_lanes() const { return {}; }
  /// CUDA's own DOT of the graph (graph backend only).
  virtual void write_cuda_dot(const std::string& path) const;
  /// The graph kernels of work submitted to `queue` from now on may launch
  /// (Executable::device_executable); Error(wrong_state) unless compiled for device launch.
  virtual void* device_graph(const std::shared_ptr<QueueState>& queue);

  /// False once this executable is destroyed: what writers of its arguments look at.
  std::shared_ptr<const bool> liveness() const noexcept { return alive_; }
  const Plan& plan() const noexcept { return *plan_; }
  const std::shared_ptr<const Plan>& shared_plan() const noexcept { return plan_; }
  Device device() const noexcept { return device_; }
  /// The name of the buffer it was compiled from; an update never changes it, so errors may
  /// name the executable while another thread replaces its plan.
  const std::string& name() const noexcept { return name_; }
  bool profiling() const noexcept { return stats_.profile_mode != ProfileMode::off; }
  unsigned profile_every() const noexcept { return profile_every_; }
  /// A launch's number (0 for the first, never reset) and whether it is profiled: launches 0,
  /// N, 2N, ... when profiling one in N.
  struct LaunchNumber {
    std::uint64_t index = 0;
    bool profiled = false;
  };
  /// Numbers the launch being made; launches are numbered in the order this is called.
  LaunchNumber number_launch() noexcept;
  const ExecutableStats& stats() const noexcept { return stats_; }
  ExecutableStats& stats() noexcept { return stats_; }
  /// stats() with edges_unneeded, the lint of Hazards::validate (plan/hazards.hpp), worked
  /// out on the first call for the plan run then: compile() leaves it out, as it costs more
  /// than the validation itself and a program that never reads it should not pay for it.
  const ExecutableStats& stats_with_lint() const;
  /// A copy of stats() for a clone, taken while no other thread counts the lint into them.
  ExecutableStats stats_for_clone() const;
  /// Held while launching or cloning: several threads may launch one executable at once (the
  /// launches are serialized), but not while another thread updates it.
  class Sharing {
   public:
    explicit Sharing(const ExecutableImpl& exe);
    ~Sharing() { exe_.users_.fetch_sub(1); }
    Sharing(const Sharing&) = delete;
    Sharing& operator=(const Sharing&) = delete;

   private:
    const ExecutableImpl& exe_;
  };
  /// Held while updating: Error(concurrent_use) when another thread launches, clones or
  /// updates the executable at the same time. Within an update frame opened by this thread
  /// the frame holds the executable already, and this costs two loads.
  class Updating {
   public:
    explicit Updating(ExecutableImpl& exe);
    ~Updating() {
      if (held_) exe_.users_.store(0);
    }
    Updating(const Updating&) = delete;
    Updating& operator=(const Updating&) = delete;

   private:
    ExecutableImpl& exe_;
    bool held_ = false;
  };
  /// Holds the executable for the calling thread's updates until close_frame()
  /// (Executable::update_frame): Error(concurrent_use) as Updating.
  void open_frame();
  void close_frame() noexcept;
  /// Within a frame the calling thread holds: writes `arguments` as kernel command `c`'s
  /// through frame_writes(), with no other check, and teaches `slot` where they went, so that
  /// its writer writes there itself until they move; false when not so held, or when they
  /// take write_arguments' path.
  bool write_in_frame(std::uint32_t c, const KernelArguments& arguments, FrameSlotBase& slot,
                      std::span<std::uint32_t> offsets) {
    if (!frame_held_here()) return false;
    FrameWrites* writes = frame_writes_asked_ ? frame_writes_ : ask_frame_writes();
    if (!writes) return false;
    const SlotLesson lesson{slot, offsets, frame_words_,
                            frame_words_.key.load(std::memory_order_relaxed)};
    return writes->frame_write(c, arguments, &lesson);
  }

  /// Events the plan's record commands record (bodies included).
  const std::vector<std::shared_ptr<EventState>>& recorded_events() const noexcept {
    return recorded_events_;
  }

 protected:
  /// Throws, naming the first command of `plan` this backend cannot run on its device.
  virtual void check_runs(const Plan& plan) const = 0;
  /// As check_runs for `commands` of `plan` alone (`root` or a body of it), whose values are
  /// new: `root` has the structure of one check_runs passed, so only new values can be refused.
  virtual void check_values(const Plan& plan, std::span<const std::uint32_t> commands,
                            const Plan& root) const = 0;
  /// check_values for the commands of `plan` (of this executable's structure) whose values are
  /// new: `top`, and those of its bodies `bodies` names.
  void check_changed(const Plan& plan, std::span<const std::uint32_t> top,
                     const BodyChanges& bodies) const;
  /// Takes `plan`, which runs here: in place when `difference` is empty (it may still refuse,
  /// as CUDA may), else rebuilt (allowed by `options`). Calls replace_plan.
  virtual UpdateResult take(std::shared_ptr<const Plan> plan, const Difference& difference,
                            const UpdateOptions& options) = 0;
  /// Makes the commands `changes` names of the bodies of `now` (of this executable's structure)
  /// take their values, command by command, where `ran` ran those bodies; false, with nothing
  /// changed, when this backend sets none alone (it then takes the whole plan).
  virtual bool take_body_values(const Plan& /*ran*/, const Plan& /*now*/,
                                const BodyChanges& /*changes*/) {
    return false;
  }
  /// The most recent launch's profile (waiting for it); nullopt when never launched.
  virtual std::optional<Profile> read_last_profile() const = 0;
  /// Where a frame's writes of kernel arguments go directly (null: through write_arguments),
  /// asked once in a frame and again after each other update in it, which may replace what
  /// it writes into.
  virtual FrameWrites* frame_writes() { return nullptr; }
  /// What frame_writes() writes into moved (a new copy of the values): writers' slots must
  /// learn again.
  void frame_values_moved() noexcept { ++frame_epoch_; }

  void replace_plan(std::shared_ptr<const Plan> plan);
  /// The plan this backend built what it launches from: plan(), or the one before updates that
  /// changed values alone (take_values), which only replace plan() and keep this one alive.
  const std::shared_ptr<const Plan>& lowered_plan() const noexcept {
    return lowered_ ? lowered_ : plan_;
  }

  /// Where the current plan's transients are and which argument words point into them; each
  /// backend binds them as it places them (update and clone rebind through it).
  TransientBinding transients_;
  /// Error(update_refused) for this executable: "cannot take the update in place: <why>".
  [[noreturn]] void refuse_update(const std::string& why,
                                  std::vector<std::string> commands = {}, int cuda_status = 0) const;

 private:
  /// Takes `plan`, of this executable's structure, whose top-level commands `top` (null: more
  /// than values changed) and commands `bodies` of its bodies have new values: command by
  /// command when only values changed and the backend sets each alone, else in place from the
  /// whole plan.
  UpdateResult take_changed(std::shared_ptr<const Plan> plan,
                            const std::vector<std::uint32_t>* top, const BodyChanges& bodies,
                            const UpdateOptions& options);
  /// Writes the values of commands `changed` of `plan` (of this executable's structure, with
  /// the same commands but for their values) and applies them, and those of `bodies`; false,
  /// with nothing changed, when the backend refuses one.
  bool take_values(std::shared_ptr<const Plan> plan, const std::vector<std::uint32_t>& changed,
                   const BodyChanges& bodies);

  std::shared_ptr<const Plan> plan_;
  std::shared_ptr<const Plan> lowered_;  // see lowered_plan(); null when plan_ is it
  const std::string name_;
  Device device_;
  mutable ExecutableStats stats_;  // mutable for edges_unneeded, counted once under lint_mutex_
  mutable std::mutex lint_mutex_;
  mutable bool lint_counted_ = false;
  unsigned profile_every_;
  std::atomic<std::uint64_t> launch_count_{0};
  std::vector<std::shared_ptr<EventState>> recorded_events_;
  // Launches and clones in progress, or `updating` while an update runs, or `framed` while
  // thread frame_words_.owner holds an update frame open.
  static constexpr int updating = -1, framed = -2;
  bool frame_held_here() const noexcept {
    // The acquire makes the owner written before `framed` visible; another thread's frame is
    // not this one's, and the exchange that follows refuses it.
    return users_.load(std::memory_order_acquire) == framed &&
           frame_words_.owner.load(std::memory_order_relaxed) == std::this_thread::get_id();
  }
  FrameWrites* ask_frame_writes();
  /// Another update: what a frame writes into may move, so frame_writes() is asked again
  /// (and says whether it did), and writers' slots wait for it.
  void forget_frame_writes() noexcept;
  [[noreturn]] void refuse_update_while(int users) const;
  mutable std::atomic<int> users_{0};
  // The owner is written before users_ becomes `framed`; the key is the epoch while a frame's
  // writes go to frame_writes_ (asked), else 0.
  FrameWords frame_words_;
  // Changes when what frame writes go into moved (frame_values_moved) and with every update
  // by a re-recorded buffer.
  std::uint64_t frame_epoch_ = 1;
  FrameWrites* frame_writes_ = nullptr;  // frame_writes() as asked last, while framed
  bool frame_writes_asked_ = false;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace cmdgraph::detail
