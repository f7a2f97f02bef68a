// GraphExecutable: a plan lowered to a CUDA graph: its instantiation (two when timed events
// profile one launch in N), launches and the two ways they are profiled (event nodes in the
// graph, or CUPTI's activity records), in graph_executable.cpp; updates node by node, as a
// whole or by a rebuild, and the update-free kernels' arguments, in graph_executable_update.cpp.
#pragma once

#include "backend/cuda_graph/device_arguments.hpp"
#include "backend/cuda_graph/graph_builder.hpp"
#include "backend/cuda_graph/graph_instance.hpp"
#include "backend/cuda_graph/shape_learning.hpp"
#include "backend/cuda_launch/cuda_executable.hpp"
#include "backend/cuda_launch/cupti_timing.hpp"
#include "cuda/cupti_session.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace cmdgraph::detail {

/// Throws naming the first command of `plan` a graph launched from the device cannot hold.
void check_device_graph(const Plan& plan);

class GraphExecutable final : public CudaExecutable, private FrameWrites {
 public:
  // `captures`: what capture_all made of the plan's capture commands (null for a clone, whose
  // captures run again). `session`: CUPTI's, when stats.profile_mode is cupti.
  GraphExecutable(std::shared_ptr<const Plan> plan, Device device, ExecutableStats stats,
                  const CudaLowering& lowering, StartingValues values, Captures* captures,
                  cuda::cupti::Session* session);
  ~GraphExecutable() override { wait_for_launches(); }

  std::unique_ptr<ExecutableImpl> clone() const override;
  void write_cuda_dot(const std::string& path) const override;
  ArgumentStore& arguments_for_update() override { return args_.writable(); }
  const ArgumentStore& current_values() const override { return args_.read(); }

  void apply_update(std::uint32_t c) override;
  bool write_arguments(std::uint32_t c, const KernelArguments& arguments) override;
  bool frame_write(std::uint32_t c, const KernelArguments& arguments,
                   const SlotLesson* lesson) override;
  void* device_graph(const std::shared_ptr<QueueState>& queue) override;

 protected:
  void check_runs(const Plan& plan) const override;
  FrameWrites* frame_writes() override;
  // Sets the nodes of executed buffers built in place (BuiltGraph::inlined), in every
  // instance; false when a changed command lies in a body built whole (a conditional's, a
  // child graph) or is a collective, or when CUDA refuses one (whose node takes its old values
  // back).
  bool take_body_values(const Plan& ran, const Plan& now, const BodyChanges& changes) override;

 private:
  ProfileMode mode() const noexcept { return stats().profile_mode; }
  // Event mode profiling one launch in N: the others launch a graph without event nodes.
  bool split() const noexcept { return mode() == ProfileMode::events && profile_every() > 1; }
  std::vector<Instance*> instances();
  // How the instance launches are timed in (`timing`) is made.
  InstanceOptions instance_options(ProfileMode timing, Captures* captures) const;
  // The update-free kernels of `plan` with `values`, where their nodes take their arguments on
  // the device: null when it has none, when profiled (the applier is no command of the
  // profile) and when launched from the device (the host hands values over as it launches).
  std::shared_ptr<DeviceArguments> device_arguments(const Plan& plan,
                                                    const ArgumentStore& values);
  // Hands the arguments updates staged to the device: the applier reads them in this launch.
  void hand_over_arguments(const cuda::Served& served);
  // How the instance of the launches not profiled is made, beside `profiled`.
  InstanceOptions plain_options(const Instance& profiled, Captures* captures) const;
  // What shaping did to the graph instantiated, in the stats (null: the plan was not shaped).
  void note_shaping(const GraphShaping* shaped);
  // Starts learning the shape of the current plan when it lacks costs and can be learned
  // (shape_learning.hpp); what an earlier learning built is kept until launches end.
  void start_learning();
  // Under mutex(), as launch `current_launch()` is enqueued: what learning does with it
  // (the instance to launch instead, whether to time it); takes over the winner when ready.
  ShapeLearning::Turn learning_turn(cudaStream_t stream);
  // Sets root command `c`'s values on `in` (a per-node update).
  void set_node(Instance& in, std::uint32_t c);
  void retire_all(std::vector<std::unique_ptr<Instance>> instances);

  void enqueue(CudaQueue& queue, CudaQueue* previous) override;
  // A launch CUPTI traces (see the definition for why collection is on only during it).
  void enqueue_traced(CudaQueue& queue, const cuda::Served& served);
  std::optional<Profile> read_last_profile() const override;
  std::vector<ClampedDispatch> clamped_dispatches() const override;

  // A collective of `in` captured again by an update: launches in flight may still run what
  // the graph captured before holds, and its communicator outlives it (the pair's graph is
  // destroyed first).
  void keep_recaptured(Instance& in, std::uint32_t c, cuda::Graph captured);
  UpdateResult take(std::shared_ptr<const Plan> plan, const Difference& difference,
                    const UpdateOptions& options) override;

  // Builds `plan` anew for every instance and has CUDA update the instance from it; why CUDA
  // refused when a rebuild may follow (else it throws the refusal).
  std::optional<std::string> update_instances(const Plan& plan, ExecutableValues& args,
                                              TransientBinding& transients,
                                              const UpdateOptions& options,
                                              std::vector<BuiltGraph>& fresh);

  // The execs now point at the fresh graphs' host callbacks and events; per-node updates
  // keep addressing the nodes they were instantiated from, which map command for command,
  // as do the clones CUPTI's records name.
  void take_built(std::vector<BuiltGraph>& fresh);
  UpdateResult rebuild(std::shared_ptr<const Plan> plan, ExecutableValues args,
                       std::string why);

  ExecutableValues args_;
  // Where the instances' indirect commands report (null without any).
  std::shared_ptr<DispatchReports> reports_;
  // The update-free kernels' arguments on their way to the device (null without any).
  std::shared_ptr<DeviceArguments> arguments_;
  ArgumentStore* frame_store_ = nullptr;  // args_, taken for writing when a frame asked
  std::uint64_t frame_store_id_ = 0;      // and which copy it was (ExecutableValues::own_id)
  Instance current_;
  std::unique_ptr<Instance> plain_;  // event mode, one launch in N: the launches not profiled
  cuda::Event switched_;  // orders launches of two instances (plain_'s, learning's) across queues
  // CUPTI mode.
  cuda::cupti::Session* session_;
  cuda::Event sampled_done_;                 // recorded after each traced launch
  std::shared_ptr<CuptiLaunch> last_traced_;
  std::vector<std::shared_ptr<const void>> unretired_;  // what a failed retire() left here
  // Device launch: current_'s upload holds every update made to it (false after an update in
  // place; a rebuilt instance is uploaded as it is instantiated).
  bool uploaded_for_device_ = true;
  // Learning the shape (null when not learning); declared last, so that its builds end
  // before the members they were made from.
  std::unique_ptr<ShapeLearning> learning_;
};

}  // namespace cmdgraph::detail
