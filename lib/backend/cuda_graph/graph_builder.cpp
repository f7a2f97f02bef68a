// GraphBuilder: walks the plan in order; each command's node comes from its kind's graph form
// (cuda_commands), placed through a Site; child graphs are built here, the shapes of several
// nodes (conditionals, indirect kernels) in graph_shapes.cpp, captures in graph_captures.cpp,
// updates of one node in graph_update.cpp.
#include "backend/cuda_graph/graph_builder.hpp"

#include "cuda/graph_ops.hpp"

#include <algorithm>
#include <utility>

namespace cmdgraph::detail {
namespace {

// The order `plan`'s nodes are added in: recording order when every edge runs forward in it,
// as a hand-built graph's nodes are added, else the plan's topological order. CUDA's replay
// depends on it: an unshaped random DAG of 4,000 kernels added in the plan's order replayed at
// 1.14-1.18x of the same graph added in recording order (bench/RESULTS.md, run 52).
// `recording` holds the recording order when that is the one returned.
const std::vector<std::uint32_t>& node_order(const Plan& plan,
                                             std::vector<std::uint32_t>& recording) {
  for (std::uint32_t c = 0; c < plan.size(); ++c) {
    for (std::uint32_t p : plan.dag->parents[c]) {
      if (p > c) return plan.dag->order;
    }
  }
  recording.resize(plan.size());
  for (std::uint32_t c = 0; c < plan.size(); ++c) recording[c] = c;
  return recording;
}

}  // namespace

void BuiltGraph::keep(const std::shared_ptr<CommunicatorState>& comm) {
  if (std::find(communicators.begin(), communicators.end(), comm) == communicators.end()) {
    communicators.push_back(comm);
  }
}

std::string BuiltGraph::name_of(cudaGraphNode_t node) const {
  for (const Origin& o : origins) {
    if (o.node == node) return command_label(*o.plan, o.command, *root);
  }
  return {};
}

// Where one command's node goes while building: after its parents in `graph`.
class GraphBuilder::Site final : public GraphSite {
 public:
  Site(GraphBuilder& builder, const Plan& plan, std::uint32_t c, const ArgumentStore& args,
       cudaGraph_t graph, std::span<const cudaGraphNode_t> deps,
       std::span<const cudaGraphEdgeData> edges, std::optional<int> priority,
       HostAncestors before, std::uint32_t timed)
      : builder_(builder), plan_(plan), c_(c), args_(args), graph_(graph), deps_(deps),
        edges_(edges), priority_(priority), timed_(timed), before_(before),
        after_(std::move(before)) {
    // A root command given a name is named by it: no string is made for its node.
    const std::string& own = plan.command(c).name;
    if (&plan != builder.root_) {
      qualified_ = command_label(plan, c, *builder.root_);
    } else if (own.empty()) {
      qualified_ = plan.name(c);  // its default name
    }
    name_ = qualified_.empty() ? std::string_view(own) : std::string_view(qualified_);
  }

  const ArgumentStore& args() const override { return args_; }
  int device() const override { return builder_.device_; }
  cuda::Served served() const override { return name_; }
  cudaGraphNode_t place(cuda::NodeSpec& spec) override {
    const cudaGraphNode_t node = cuda::add_node(graph_, deps_, spec, name_, edges_);
    if (priority_ && !spec.copy && spec.params.type == cudaGraphNodeTypeKernel) {
      cuda::set_kernel_priority(node, *priority_, name_);
      builder_.out_->node_priority = true;
    }
    if (builder_.cupti_) {
      builder_.note(node, timed_,
                    spec.copy ? cuda::cupti::work::copies : cuda::cupti::work_of(spec.params.type));
    }
    return node;
  }
  void* host_callback(const std::shared_ptr<HostTask>& task) override {
    HostCallback* callback =
        builder_.out_->callbacks.add(task, std::string(name_), builder_.errors_, before_);
    after_ = only(callback);
    if (builder_.cupti_ && builder_.fold_into_ == no_timed) {
      CuptiTiming& timing = *builder_.out_->cupti;
      callback->time_launch = &timing.host_launch;
      callback->times = &timing.host_times.emplace_back();
      timing.commands[timed_].host = callback->times;
    }
    return callback;
  }
  cudaGraphNode_t body_graph() override {
    const Plan& body = *plan_.bodies_of(c_).front();
    // Built in place rather than as a child graph node, which CUDA copies: its commands' nodes
    // are the graph's own, which an update sets one by one, and a body holding a
    // device-updatable node could not be copied (the copy crashed at teardown on the H200,
    // tools/probes). Event profiling keeps the child graph, each command timed inside it, and
    // so does a graph for device launch, which may hold no empty node.
    const bool as_child = (builder_.profile_ || builder_.device_launch_) && !builder_.cupti_;
    if (!as_child || sized_on_device(body)) {
      return builder_.inline_body(body, c_, graph_, deps_, timed_, priority_, before_, after_);
    }
    std::vector<cudaGraphNode_t> nodes;
    cuda::Graph child = cuda::create_graph(name_);
    after_ = builder_.add_nodes(body, body.arguments(), child.get(), nodes, nullptr,
                                builder_.profile_, before_, priority_);
    // The child is cloned into the node; ours is destroyed when this returns.
    return builder_.add_child(graph_, deps_, child.get(), name_);
  }
  cudaGraphNode_t captured_graph(const CapturePayload&) override {
    if (builder_.cupti_) return builder_.capture_inline(plan_, c_, graph_, deps_, timed_);
    // The captured graph is cloned into the node: it stays for another build to use.
    cudaGraph_t captured = nullptr;
    cuda::Graph child;
    if (builder_.captures_) {
      const auto it = builder_.captures_->graphs.find({&plan_, c_});
      if (it != builder_.captures_->graphs.end()) captured = it->second.get();
    }
    if (!captured) {
      child = builder_.capture(plan_, c_);
      captured = child.get();
    }
    return builder_.add_child(graph_, deps_, captured, name_);
  }
  cudaGraphNode_t collective_graph(const CollectivePayload& p) override {
    builder_.out_->keep(p.comm);
    cuda::Graph child = capture_collective(p, args_, builder_.capture_stream().get(), name_);
    if (!builder_.cupti_) {
      const cudaGraphNode_t node = builder_.add_child(graph_, deps_, child.get(), name_);
      builder_.out_->collectives[{&plan_, c_}] = std::move(child);
      return node;
    }
    // CUPTI: NCCL's kernels run nested, in a child graph node (which an update replaces):
    // timed from a marker before it to one after it (a side branch, the node stays the
    // command's).
    const cudaGraphNode_t entry = builder_.marker(graph_, deps_, timed_, plan_, c_);
    const cudaGraphNode_t node = builder_.add_child(graph_, {&entry, 1}, child.get(), name_);
    builder_.note_nested(cuda::embedded_graph(node, name_), timed_, name_);
    builder_.marker(graph_, {&node, 1}, timed_, plan_, c_);
    builder_.out_->collectives[{&plan_, c_}] = std::move(child);
    return node;
  }
  cudaGraphNode_t conditional(cudaGraphConditionalNodeType type,
                              const Condition& condition) override {
    return builder_.add_conditional(plan_, c_, type, condition, args_, graph_, deps_, timed_,
                                    priority_);
  }
  cudaGraphNode_t indirect(cuda::NodeSpec& work, const IndirectDispatch& dispatch) override {
    return builder_.add_indirect(plan_, c_, work, dispatch, graph_, deps_, timed_, priority_);
  }
  // Only the root plan allocates (the recording refuses allocations in bodies).
  void allocated(void* address) override { builder_.allocated(c_, address); }
  void* to_free() const override { return builder_.to_free(c_); }
  /// The nearest host-task ancestors the command's dependants inherit.
  const HostAncestors& after() const noexcept { return after_; }

 private:
  GraphBuilder& builder_;
  const Plan& plan_;
  std::uint32_t c_;
  const ArgumentStore& args_;
  cudaGraph_t graph_;
  std::span<const cudaGraphNode_t> deps_;
  std::span<const cudaGraphEdgeData> edges_;  // empty: all full
  std::optional<int> priority_;               // of its kernels and its body's
  std::uint32_t timed_;  // CUPTI: the run its nodes are noted for
  std::string qualified_;
  std::string_view name_;
  HostAncestors before_;  // the command's nearest host-task ancestors
  HostAncestors after_;   // its dependants': itself if a host task, else what it passes on
};

BuiltGraph GraphBuilder::build_command(const Plan& root, const Plan& plan, std::uint32_t c,
                                       const ArgumentStore& args) {
  BuiltGraph out;
  out_ = &out;
  root_ = &root;
  out.root = &root;
  out.graph = cuda::create_graph(cuda::for_executable(root.buffer_name));
  Site site(*this, plan, c, args, out.graph.get(), {}, {},
            kernel_priority(plan.command(c), device_, {}), nullptr, no_timed);
  out.nodes.assign(1, add_graph_node(plan.payload(c), site));
  out.origins.push_back({out.nodes[0], &plan, c});
  ++out.node_count;
  out_ = nullptr;
  return out;
}

// The body's nodes straight in `graph`, between an empty entry node (after `deps`) and an empty
// exit node (after the body's sinks), which the command's dependants follow; outside
// conditionals' bodies, indexed by the executes leading to it (BuiltGraph::inlined).
cudaGraphNode_t GraphBuilder::inline_body(const Plan& body, std::uint32_t execute,
                                          cudaGraph_t graph,
                                          std::span<const cudaGraphNode_t> deps,
                                          std::uint32_t timed, std::optional<int> priority,
                                          const HostAncestors& before, HostAncestors& after) {
  const cuda::Served served = cuda::for_executable(root_->buffer_name);
  cuda::NodeSpec empty = cuda::NodeSpec::of(cudaGraphNodeTypeEmpty);
  const cudaGraphNode_t entry = cuda::add_node(graph, deps, empty, served);
  std::vector<cudaGraphNode_t> nodes;
  const std::uint32_t owner = std::exchange(owner_, timed);
  if (path_) path_->push_back(execute);
  after = add_nodes(body, body.arguments(), graph, nodes, entry, false, before, priority);
  if (path_) {
    out_->inlined.emplace(*path_, nodes);
    path_->pop_back();
  }
  owner_ = owner;
  std::vector<cudaGraphNode_t> sinks;
  for (std::uint32_t k = 0; k < body.size(); ++k) {
    if (body.dag->children[k].empty()) sinks.push_back(nodes[k]);
  }
  if (sinks.empty()) sinks.push_back(entry);
  empty = cuda::NodeSpec::of(cudaGraphNodeTypeEmpty);
  return cuda::add_node(graph, sinks, empty, served);
}

BuiltGraph GraphBuilder::build(const Plan& plan, ExecutableValues& args,
                               TransientBinding& transients, bool bound,
                               std::shared_ptr<const GraphShaping> shaped) {
  BuiltGraph out;
  out_ = &out;
  root_ = &plan;
  // Binding transients writes their addresses into the values: take a copy of our own first,
  // so every node reads the one store.
  if (!bound && !plan.memory.list.empty()) args.writable();
  args_ = &args;
  transients_ = &transients;
  bound_ = bound;
  allocations_.assign(plan.memory.list.size(), nullptr);
  out.root = &plan;
  out.shaping = shaped ? std::move(shaped) : plan.shaping();
  out.graph = cuda::create_graph(cuda::for_executable(plan.buffer_name));
  if (cupti_) out.cupti = std::make_shared<CuptiTiming>();
  cudaGraphNode_t root = nullptr;
  if (profile_) {
    out.launch_start = cuda::create_event(device_, true, cuda::for_executable(plan.buffer_name));
    cuda::NodeSpec spec = cuda::NodeSpec::of(cudaGraphNodeTypeEventRecord);
    spec.params.eventRecord.event = out.launch_start.get();
    root = cuda::add_node(out.graph.get(), {}, spec, cuda::for_executable(plan.buffer_name));
  }
  add_nodes(plan, args.read(), out.graph.get(), out.nodes, root, profile_, nullptr);
  if (arguments_ && !arguments_->empty()) add_applier(plan);
  free_the_rest(plan);
  out_ = nullptr;
  return out;
}

// The update-free kernels' nodes made device-updatable, and the applier, a root, before each:
// CUDA shows a node an update made earlier in the same launch (tools/probes/device_updates.cu).
// An edge goes only to those no other such node precedes: one into each node of a chain made
// every node of it wait for two parents, which cost a replay of 1,000 one-thread kernels 1.41x
// (bench_update_free, H100).
void GraphBuilder::add_applier(const Plan& plan) {
  const cuda::Served served = cuda::for_executable(plan.buffer_name);
  const std::vector<std::uint32_t>& commands = arguments_->commands();
  out_->applier_table = ApplierTable::of(commands.size());
  for (std::size_t place = 0; place < commands.size(); ++place) {
    const std::uint32_t c = commands[place];
    out_->applier_table.nodes[place] =
        cuda::make_device_updatable(out_->nodes[c], plan.name(c));
  }
  ApplierNode node(arguments_->newest(), out_->applier_table, arguments_->seen());
  out_->applier = cuda::add_node(out_->graph.get(), {}, node.spec(), served);
  // The plan's edges hold in the graph built (shaping keeps their reach).
  std::vector<char> after_applier(plan.size(), 0);
  for (const std::uint32_t c : plan.dag->order) {
    for (const std::uint32_t p : plan.dag->parents[c]) after_applier[c] |= after_applier[p];
    if (after_applier[c] || !arguments_->holds(c)) continue;
    cuda::add_edge(out_->graph.get(), out_->applier, out_->nodes[c], served);
    after_applier[c] = 1;
  }
  ++out_->node_count;
}

void GraphBuilder::allocated(std::uint32_t c, void* address) {
  const std::uint32_t t = root_->memory.allocated_by(c);
  allocations_[t] = address;
  // In topological order: every node reaching the transient comes after this one.
  if (!bound_) transients_->bind(t, address, args_->writable());
}

void* GraphBuilder::to_free(std::uint32_t c) const {
  // The address this graph's own allocation node returned: CUDA frees only those.
  return allocations_[root_->memory.released_by(c)];
}

// A transient never freed lives to the end of the launch: freed after every command, so
// the next launch allocates it again (CUDA refuses to relaunch a graph whose allocations are
// still live).
void GraphBuilder::free_the_rest(const Plan& plan) {
  std::vector<cudaGraphNode_t> sinks;
  for (std::uint32_t c = 0; c < plan.size(); ++c) {
    if (plan.dag->children[c].empty()) sinks.push_back(out_->nodes[c]);
  }
  for (std::uint32_t t = 0; t < plan.memory.list.size(); ++t) {
    if (plan.memory.list[t].release != TransientMemory::none) continue;
    cuda::NodeSpec spec = cuda::NodeSpec::of(cudaGraphNodeTypeMemFree);
    spec.params.free.dptr = allocations_[t];
    const std::string& name = plan.name(plan.memory.list[t].alloc);
    out_->origins.push_back({cuda::add_node(out_->graph.get(), sinks, spec, name), &plan,
                             plan.memory.list[t].alloc});
    ++out_->node_count;
  }
}

cudaGraphNode_t GraphBuilder::add_event_node(cudaGraph_t graph,
                                             std::span<const cudaGraphNode_t> deps,
                                             cudaEvent_t* event) {
  out_->events.push_back(cuda::create_event(device_, true));
  *event = out_->events.back().get();
  cuda::NodeSpec spec = cuda::NodeSpec::of(cudaGraphNodeTypeEventRecord);
  spec.params.eventRecord.event = *event;
  return cuda::add_node(graph, deps, spec, cuda::no_command);
}

cudaGraphNode_t GraphBuilder::add_child(cudaGraph_t graph, std::span<const cudaGraphNode_t> deps,
                                        cudaGraph_t child, cuda::Served served) {
  cuda::NodeSpec spec = cuda::NodeSpec::of(cudaGraphNodeTypeGraph);
  spec.params.graph.graph = child;
  return cuda::add_node(graph, deps, spec, served);
}

HostAncestors GraphBuilder::add_nodes(const Plan& plan, const ArgumentStore& args,
                                      cudaGraph_t graph, std::vector<cudaGraphNode_t>& nodes,
                                      cudaGraphNode_t root, bool profiled, HostAncestors entry,
                                      std::optional<int> priority) {
  nodes.assign(plan.size(), nullptr);
  std::vector<std::uint32_t> run_of(cupti_ ? plan.size() : 0, no_timed);
  std::vector<HostAncestors> after(plan.size());
  std::vector<HostAncestors> parents;
  // Profiling: start -> command -> end, and dependants follow the end event, so every
  // command's start is recorded after its parents' ends (the timings honour the edges).
  std::vector<cudaGraphNode_t> ends(profiled ? plan.size() : 0, nullptr);
  std::vector<cudaGraphNode_t> deps;
  std::vector<cudaGraphEdgeData> edges;  // per dep, when one of them is programmatic
  // Event profiling puts event nodes between kernels, which take full edges only.
  const bool programmatic = programmatic_ && !profiled && !plan.dag->programmatic.empty();
  // The top level's edges as shaped, when shaped (a superset in reach of the plan's), in the
  // order of the shaped graph's model.
  const bool shaped = &plan == root_ && out_->shaping && out_->shaping->shaped();
  const Adjacency& graph_parents = shaped ? out_->shaping->parents : plan.dag->parents;
  std::vector<std::uint32_t> recording;
  const std::vector<std::uint32_t>& order =
      shaped ? out_->shaping->order : node_order(plan, recording);
  for (std::uint32_t c : order) {
    deps.clear();
    edges.clear();
    for (std::uint32_t p : graph_parents[c]) deps.push_back(profiled ? ends[p] : nodes[p]);
    if (programmatic) add_edge_data(plan, c, graph_parents[c], edges);
    if (deps.empty() && root) deps.push_back(root);
    parents.clear();
    for (std::uint32_t p : plan.dag->parents[c]) parents.push_back(after[p]);
    if (parents.empty()) parents.push_back(entry);
    ProfilePoint point{&plan, c, nullptr, nullptr};
    if (profiled) deps.assign(1, add_event_node(graph, deps, &point.start));
    const std::uint32_t timed = cupti_ ? timed_run(plan, c, run_of) : no_timed;
    Site site(*this, plan, c, args, graph, deps, edges,
              kernel_priority(plan.command(c), device_, priority), merged(parents), timed);
    nodes[c] = add_graph_node(plan.payload(c), site);
    after[c] = site.after();
    out_->origins.push_back({nodes[c], &plan, c});
    ++out_->node_count;
    if (profiled) {
      ends[c] = add_event_node(graph, {&nodes[c], 1}, &point.end);
      out_->points.push_back(point);
    }
  }
  parents.clear();
  for (std::uint32_t c = 0; c < plan.size(); ++c) {
    if (plan.dag->children[c].empty()) parents.push_back(after[c]);
  }
  if (plan.size() == 0) parents.push_back(entry);
  return merged(parents);
}

// The data of each edge into command `c` of `plan` from `parents` (its graph's), in their
// order, when one of them is programmatic; nothing when all are full.
void GraphBuilder::add_edge_data(const Plan& plan, std::uint32_t c,
                                 std::span<const std::uint32_t> parents,
                                 std::vector<cudaGraphEdgeData>& edges) {
  for (std::uint32_t p : parents) {
    if (!plan.is_programmatic(p, c)) continue;
    edges.assign(parents.size(), cudaGraphEdgeData{});
    std::size_t i = 0;
    for (std::uint32_t q : parents) {
      if (plan.is_programmatic(q, c)) {
        edges[i] = cuda::programmatic_edge();
        ++out_->programmatic_edges;
      }
      ++i;
    }
    return;
  }
}

}  // namespace cmdgraph::detail
