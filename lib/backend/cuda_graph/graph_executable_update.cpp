// GraphExecutable's updates: one node set in place, or staged for the applier when its kernel
// is update-free; a re-recorded plan taken in place (cudaGraphExecUpdate) or rebuilt.
#include "backend/cuda_graph/graph_executable.hpp"

#include "command/payloads.hpp"
#include "command/transient_range.hpp"
#include "cuda/graph_ops.hpp"

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace cmdgraph::detail {
namespace {

// An executed buffer with commands to set: where it lies (the executes leading to it), the
// body's plan it ran with and the one with its new values, and which commands.
struct BodyToSet {
  std::vector<std::uint32_t> path;
  const Plan* ran;
  const Plan* now;
  const std::vector<std::uint32_t>* commands;
};

// Whether a body, or one of its own, has commands with new values.
bool any_changed(const Plan& ran, const Plan& now, const BodyChanges& changes) {
  if (&ran == &now) return false;
  const auto it = changes.find({&ran, &now});
  if (it == changes.end() || !it->second.empty()) return true;  // never compared: changed
  for (std::uint32_t c = 0; c < now.size(); ++c) {
    for (std::size_t b = 0; b < now.bodies_of(c).size(); ++b) {
      if (any_changed(*ran.bodies_of(c)[b], *now.bodies_of(c)[b], changes)) return true;
    }
  }
  return false;
}

// The executed buffers under `ran` / `now`, at `path`, with commands to set; false when a
// change lies in a conditional's body or a command cannot be set alone.
bool bodies_to_set(const Plan& ran, const Plan& now, const BodyChanges& changes,
                   std::vector<std::uint32_t>& path, std::vector<BodyToSet>& out) {
  for (std::uint32_t c = 0; c < now.size(); ++c) {
    for (std::size_t b = 0; b < now.bodies_of(c).size(); ++b) {
      const Plan& was = *ran.bodies_of(c)[b];
      const Plan& is = *now.bodies_of(c)[b];
      if (!traits(now.kind(c)).expands) {
        if (any_changed(was, is, changes)) return false;
        continue;
      }
      if (&was == &is) continue;
      const auto it = changes.find({&was, &is});
      if (it == changes.end()) return false;
      path.push_back(c);
      for (std::uint32_t k : it->second) {
        // A collective's node takes a graph captured again, which the executable keeps.
        const KindTraits& t = traits(is.kind(k));
        if (!t.updatable || t.captured) return false;
      }
      if (!it->second.empty()) out.push_back({path, &was, &is, &it->second});
      if (!bodies_to_set(was, is, changes, path, out)) return false;
      path.pop_back();
    }
  }
  return true;
}

}  // namespace

bool GraphExecutable::take_body_values(const Plan& ran, const Plan& now,
                                       const BodyChanges& changes) {
  std::vector<BodyToSet> bodies;
  std::vector<std::uint32_t> path;
  if (!bodies_to_set(ran, now, changes, path, bodies)) return false;
  // Every node found before any is set: a lookup a body, not a command.
  struct Set {
    Instance* in;
    const BodyToSet* body;
    std::uint32_t command;
    cudaGraphNode_t node;
  };
  std::vector<Set> sets;
  for (Instance* in : instances()) {
    for (const BodyToSet& body : bodies) {
      const auto nodes = in->built.inlined.find(body.path);
      if (nodes == in->built.inlined.end()) return false;  // a child graph (event profiling)
      for (std::uint32_t k : *body.commands) sets.push_back({in, &body, k, nodes->second[k]});
    }
  }
  const cuda::ScopedDevice on(ordinal());
  auto set = [this](const Set& s, const Plan& body) {
    GraphBuilder::update_node(body, s.command, body.arguments(), ordinal(), s.in->exec.get(),
                              s.node);
  };
  std::size_t applied = 0;
  try {
    for (; applied < sets.size(); ++applied) set(sets[applied], *sets[applied].body->now);
  } catch (const Error&) {
    // As for a root command: every node set so far takes its old values again, and the whole
    // path decides.
    for (std::size_t i = 0; i <= applied && i < sets.size(); ++i) {
      try {
        set(sets[i], *sets[i].body->ran);
      } catch (const Error&) {  // refused again: it never took the new values
      }
    }
    return false;
  }
  if (learning_) retire_all(learning_->release());  // built from the values before
  uploaded_for_device_ = false;
  return true;
}

void GraphExecutable::apply_update(std::uint32_t c) {
  if (arguments_ && arguments_->stage(c, args_.read())) return;  // the next launch hands it
  const cuda::ScopedDevice on(ordinal());
  for (Instance* in : instances()) set_node(*in, c);
  if (learning_) learning_->changed(c);
  uploaded_for_device_ = false;
}

bool GraphExecutable::write_arguments(std::uint32_t c, const KernelArguments& arguments) {
  // Outside a frame: the store taken for writing each time (update()'s path, where the write
  // is refused, takes it as well).
  return frame_writes() && frame_write(c, arguments, nullptr);
}

FrameWrites* GraphExecutable::frame_writes() {
  if (!arguments_) return nullptr;
  frame_store_ = &args_.writable();  // nothing else updates or launches until asked again
  if (args_.own_id() != frame_store_id_) {
    frame_store_id_ = args_.own_id();
    frame_values_moved();
  }
  return this;
}

bool GraphExecutable::frame_write(std::uint32_t c, const KernelArguments& arguments,
                                  const SlotLesson* lesson) {
  // Values reaching transient memory are checked and rebound on update()'s path.
  if (!arguments_->holds(c) || any_live_transients()) return false;
  arguments_->write(c, *frame_store_, arguments);
  if (lesson && lesson->offsets.size() == arguments.count) {
    arguments_->teach(c, *frame_store_, *lesson);
  }
  return true;
}

std::shared_ptr<DeviceArguments> GraphExecutable::device_arguments(
    const Plan& plan, const ArgumentStore& values) {
  std::shared_ptr<DeviceArguments> arguments;
  if (mode() == ProfileMode::off && !lowering().device_launch) {
    arguments = std::make_shared<DeviceArguments>(plan, values);
    if (arguments->empty()) arguments.reset();
  }
  this->stats().commands_update_free = arguments ? arguments->size() : 0;
  return arguments;
}

void GraphExecutable::hand_over_arguments(const cuda::Served& served) {
  ApplierNode applier(arguments_->publish(args_.read()), current_.built.applier_table,
                      arguments_->seen());
  try {
    cuda::set_node(current_.exec.get(), current_.built.applier, applier.spec(), served);
  } catch (...) {
    arguments_->withdraw();
    throw;
  }
}

void GraphExecutable::keep_recaptured(Instance& in, std::uint32_t c, cuda::Graph captured) {
  cuda::Graph& kept = in.built.collectives[{lowered_plan().get(), c}];
  auto old = std::make_shared<std::pair<std::shared_ptr<CommunicatorState>, cuda::Graph>>(
      communicator(plan().payload(c)), std::exchange(kept, std::move(captured)));
  try {
    retire(old);
  } catch (const Error&) {
    // The node already runs the new graph: the update stands, and the old graph stays with
    // the executable instead of the queue.
    unretired_.push_back(std::move(old));
  }
}

UpdateResult GraphExecutable::take(std::shared_ptr<const Plan> plan,
                                   const Difference& difference, const UpdateOptions& options) {
  ExecutableValues args(plan->values);
  if (difference) return rebuild(std::move(plan), std::move(args), difference.what);
  if (reports_ || arguments_) {
    const std::string why =
        "CUDA updates no graph with device-updatable kernel nodes (the indirect and "
        "update-free commands') as a whole";
    if (!options.reinstantiate_if_needed) refuse_update(why);
    return rebuild(std::move(plan), std::move(args), why);
  }
  if (!plan->memory.list.empty()) {
    // Every graph built places its memory nodes' allocations anew, and a node may not reach
    // another graph's (the H200 refused the memset of a re-recorded pipeline, run 47).
    std::string why = resized_transient(this->plan(), *plan);
    if (why.empty()) why = "CUDA places a graph's transient memory anew in every graph built";
    if (!options.reinstantiate_if_needed) refuse_update(why);
    return rebuild(std::move(plan), std::move(args), why);
  }
  const cuda::ScopedDevice on(ordinal());
  TransientBinding transients;  // none: a plan with transients was rebuilt above
  std::vector<BuiltGraph> fresh;
  if (auto why = update_instances(*plan, args, transients, options, fresh)) {
    return rebuild(std::move(plan), std::move(args), std::move(*why));
  }
  take_built(fresh);
  args_ = std::move(args);
  transients_ = std::move(transients);
  replace_plan_after_launches(std::move(plan));
  if (learning_) retire_all(learning_->release());  // built from the values before
  uploaded_for_device_ = false;
  return {};
}

std::optional<std::string> GraphExecutable::update_instances(const Plan& plan,
                                                             ExecutableValues& args,
                                                             TransientBinding& transients,
                                                             const UpdateOptions& options,
                                                             std::vector<BuiltGraph>& fresh) {
  for (Instance* in : instances()) {
    GraphBuilder builder({.device = ordinal(),
                          .errors = current_.host_errors.get(),
                          .timing = in == &current_ ? mode() : ProfileMode::off,
                          .programmatic = lowering().programmatic,
                          .reports = reports_,
                          .device_launch = lowering().device_launch});
    // The plan has the executable's structure, so its lane edges still hold every edge;
    // costs given since would shape it otherwise, and CUDA updates no edge.
    fresh.push_back(builder.build(plan, args, transients, true, in->built.shaping));
    std::string why;
    cudaGraphNode_t at = nullptr;
    const cudaError_t status =
        cuda::update_exec(in->exec.get(), fresh.back().graph.get(), why, at);
    if (status == cudaSuccess) continue;
    why = "CUDA refused the update (" + why + ")";
    if (!options.reinstantiate_if_needed) {
      const std::string command = fresh.back().name_of(at);
      std::vector<std::string> named;
      if (!command.empty()) named.push_back(command);
      refuse_update(why + (command.empty() ? "" : " at command '" + command + "'"),
                    std::move(named), static_cast<int>(status));
    }
    return why;
  }
  return std::nullopt;
}

void GraphExecutable::take_built(std::vector<BuiltGraph>& fresh) {
  std::lock_guard lock(mutex());
  std::size_t i = 0;
  for (Instance* in : instances()) {
    BuiltGraph& now = fresh[i++];
    auto old = std::make_shared<BuiltGraph>();
    old->callbacks = std::exchange(in->built.callbacks, std::move(now.callbacks));
    old->events = std::exchange(in->built.events, std::move(now.events));
    old->launch_start = std::exchange(in->built.launch_start, std::move(now.launch_start));
    old->marker_memory = std::exchange(in->built.marker_memory, std::move(now.marker_memory));
    in->built.points = std::move(now.points);
    if (now.cupti) {
      now.cupti->map = in->built.cupti->map;
      in->built.cupti = std::move(now.cupti);
    }
    old->collectives = std::exchange(in->built.collectives, std::move(now.collectives));
    // The graph instantiated first stays, with what it captured: its communicators stay too.
    old->communicators = in->built.communicators;
    for (const auto& comm : now.communicators) in->built.keep(comm);
    retire(std::move(old));
  }
}

UpdateResult GraphExecutable::rebuild(std::shared_ptr<const Plan> plan, ExecutableValues args,
                                      std::string why) {
  // Reports of their own for the fresh instances: launches in flight write the old ones,
  // which their graphs keep.
  std::shared_ptr<DispatchReports> before = std::exchange(reports_, pinned_reports(*plan));
  std::shared_ptr<DeviceArguments> arguments_before =
      std::exchange(arguments_, device_arguments(*plan, args.read()));
  TransientBinding transients(*plan);
  std::optional<Instance> fresh;
  std::unique_ptr<Instance> fresh_plain;
  try {
    fresh.emplace(instantiate(*plan, args, transients, instance_options(mode(), nullptr)));
    if (split()) {
      fresh_plain = std::make_unique<Instance>(
          instantiate(*plan, args, transients, plain_options(*fresh, nullptr)));
    }
  } catch (...) {
    reports_ = std::move(before);
    arguments_ = std::move(arguments_before);
    this->stats().commands_update_free = arguments_ ? arguments_->size() : 0;
    throw;
  }
  std::lock_guard lock(mutex());
  retire(std::make_shared<Instance>(std::exchange(current_, std::move(*fresh))));
  if (arguments_before) retire(std::move(arguments_before));  // launches in flight read it
  if (plain_) retire(std::shared_ptr<Instance>(std::exchange(plain_, std::move(fresh_plain))));
  start_context(current_.context);  // the fresh instance counts its own launches
  note_shaping(current_.built.shaping.get());
  uploaded_for_device_ = true;
  args_ = std::move(args);
  transients_ = std::move(transients);
  replace_plan_after_launches(std::move(plan));
  start_learning();  // another structure: what was learned does not hold
  return {true, std::move(why)};
}

}  // namespace cmdgraph::detail
