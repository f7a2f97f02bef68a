// Each kind of command on a CUDA device: its check, its launch parameters, its graph node and
// its stream operation.
#include "backend/cuda_commands/cuda_commands.hpp"

#include "backend/cuda_commands/collective_forms.hpp"
#include "backend/cuda_rules.hpp"
#include "cuda/runtime.hpp"
#include "cuda/stream_ops.hpp"
#include "error/task_failure.hpp"
#include "sync/cuda_queue.hpp"
#include "sync/event_state.hpp"

#include <cmdgraph/error.hpp>
#include <cmdgraph/transient.hpp>

#include <algorithm>
#include <map>
#include <mutex>

namespace cmdgraph::detail {
namespace {

// Threads per block for parallel_for: a multiple of the warp that suits simple loops.
constexpr unsigned parallel_for_block = 256;

// Resident blocks of `kernel` per device, so a grid-stride parallel_for fills the GPU once
// and no more. Cached: occupancy queries cost microseconds.
unsigned resident_blocks(const void* kernel, int device) {
  static std::mutex mutex;
  static std::map<std::pair<const void*, int>, unsigned> cache;
  std::lock_guard lock(mutex);
  const auto key = std::make_pair(kernel, device);
  if (const auto it = cache.find(key); it != cache.end()) return it->second;
  const int per_sm = cuda::resident_blocks_per_multiprocessor(kernel, parallel_for_block);
  const unsigned blocks =
      static_cast<unsigned>(std::max(1, per_sm * cuda::multiprocessor_count(device)));
  cache.emplace(key, blocks);
  return blocks;
}

// A memory operation's values as CUDA's stream memory operation takes them.
cuda::MemoryOp memory_op(const ValueSpec& v) {
  cuda::MemoryOp op;
  op.address = v.target.data;
  op.value = v.value;
  op.width = static_cast<unsigned>(v.target.element_size);
  if (v.waits) {
    op.wait = v.compare == ValueCompare::at_least ? cuda::MemoryOp::Wait::at_least
              : v.compare == ValueCompare::equal  ? cuda::MemoryOp::Wait::equal
                                                  : cuda::MemoryOp::Wait::any_bit;
  }
  return op;
}

// ---- Checks: can the command run on this device, where it sits? ----

// What this device needs of each command (where a command sits, cuda_rules checked first).
class Check {
 public:
  Check(const Plan& plan, std::uint32_t c, const Plan& root, int device)
      : plan_(plan), c_(c), root_(root), device_(device) {}

  void operator()(const KernelPayload&) const {}
  void operator()(const ParallelForPayload& p) const {
    if (!p.device_kernel) {
      refuse(errc::unsupported,
             "its functor has no device version (record it in a translation unit compiled by "
             "nvcc, with a __host__ __device__ call operator)");
    }
  }
  void operator()(const CopyPayload& p) const {
    const auto& copy = plan_.arguments().get<CopySpec>(p.spec);
    memory(copy.dst, true);
    memory(copy.src, true);
  }
  void operator()(const FillPayload& p) const {
    memory(plan_.arguments().get<FillSpec>(p.spec).dst, false);
  }
  void operator()(const HostPayload&) const {}
  void operator()(const EventRecordPayload& p) const { event(*p.event, false); }
  void operator()(const EventWaitPayload& p) const { event(*p.event, true); }
  void operator()(const NestedPayload&) const { bodies(); }
  void operator()(const CapturePayload&) const {}
  void operator()(const BarrierPayload&) const {}
  void operator()(const LoopPayload& p) const { conditional(p.condition); }
  void operator()(const IfPayload& p) const { conditional(p.condition); }
  void operator()(const CollectivePayload& p) const {
    if (const auto refusal = collective_refusal(p, device_)) refuse(refusal->code, refusal->why);
    for (const MemoryRange& r : collective_memory(p, plan_.arguments())) memory(r, false);
  }
  // Recorded only at the top of the buffer compiled (the recording refuses them in bodies).
  void operator()(const AllocPayload&) const {}
  void operator()(const FreePayload&) const {}
  void operator()(const IfElsePayload& p) const { conditional(p.condition); }
  void operator()(const SwitchPayload& p) const { conditional(p.condition); }
  void operator()(const WriteValuePayload& p) const {
    memory(plan_.arguments().get<ValueSpec>(p.spec).target, false);
  }
  void operator()(const WaitValuePayload& p) const {
    memory(plan_.arguments().get<ValueSpec>(p.spec).target, false);
  }
  void operator()(const IndirectPayload& p) const {
    if (!p.function) {
      refuse(errc::unsupported,
             "its functor has no device version (record it in a translation unit compiled by "
             "nvcc, with a __host__ __device__ call operator)");
    }
    memory(plan_.arguments().get<IndirectSpec>(p.spec).source, false);
  }

  /// Checks every command of `plan`.
  static void all(const Plan& plan, const Plan& root, int device) {
    for (std::uint32_t c = 0; c < plan.size(); ++c) {
      std::visit(Check(plan, c, root, device), plan.payload(c));
    }
  }

  // A device reaches host memory and its own (a memory operation pinned host memory only); a
  // copy may also reach another GPU (a peer copy), for which peer access is opened here.
  void memory(const MemoryRange& r, bool peer_allowed) const {
    if (std::string why = cuda_memory_breach(plan_.kind(c_), r); !why.empty()) {
      refuse(errc::unsupported, why);
    }
    // Transient memory is the executing device's own.
    if (r.space != MemorySpace::device || r.device == device_ || r.device == transient_device) {
      return;
    }
    if (r.device < 0 || r.device >= cuda::device_count()) {
      refuse(errc::device_mismatch,
             "it touches memory of cuda:" + std::to_string(r.device) + ", which does not exist");
    }
    if (!peer_allowed) {
      refuse(errc::device_mismatch,
             "it touches memory of cuda:" + std::to_string(r.device) + " but runs on cuda:" +
                 std::to_string(device_) + " (only copies reach another device)");
    }
    cuda::open_peer_access(device_, r.device, command_label(plan_, c_, root_));
  }

  [[noreturn]] void refuse(errc code, const std::string& why) const {
    const std::string name = command_label(plan_, c_, root_);
    throw Error(code, "command '" + name + "' cannot run on this CUDA device: " + why, {name});
  }

 private:
  // A device records only its own events but may wait for any GPU's, as a stream may.
  void event(const EventState& e, bool waits) const {
    const Device d = e.device();
    if (!d.is_cuda() || (d.ordinal() != device_ && !waits)) {
      refuse(errc::device_mismatch,
             "its event belongs to " + d.name() +
                 (d.is_cuda() ? " (a device records only its own events)" : ""));
    }
  }
  void bodies() const {
    for (const auto& body : plan_.bodies_of(c_)) all(*body, root_, device_);
  }
  // A command that runs its body through a conditional node.
  void conditional(const Condition& condition) const {
    if (!condition.device_kernel) {
      refuse(errc::unsupported,
             "its condition or selector has no device version (record it in a translation unit "
             "compiled by nvcc, with a __host__ __device__ call operator)");
    }
    bodies();
  }

  const Plan& plan_;
  std::uint32_t c_;
  const Plan& root_;
  int device_;
};

// ---- Launch parameters of the kinds that run one kernel ----

struct Launch {
  const ArgumentStore& args;
  int device;

  std::optional<KernelLaunch> operator()(const KernelPayload& kp) const {
    KernelLaunch k;
    const auto& config = args.get<LaunchConfig>(kp.config);
    k.function = kp.function;
    k.grid = dim3(config.grid.x, config.grid.y, config.grid.z);
    k.block = dim3(config.block.x, config.block.y, config.block.z);
    k.shared_bytes = static_cast<unsigned>(config.shared_bytes);
    for (std::uint32_t i = 0; i < kp.param_count; ++i) {
      k.params.push_back(args.data(kp.first_param + i));
    }
    return k;
  }
  std::optional<KernelLaunch> operator()(const ParallelForPayload& pf) const {
    KernelLaunch k;
    const std::size_t n = args.get<std::size_t>(pf.count());
    const std::size_t needed = (n + parallel_for_block - 1) / parallel_for_block;
    k.function = pf.device_kernel;
    k.block = dim3(parallel_for_block);
    k.grid = dim3(static_cast<unsigned>(
        std::min<std::size_t>(needed, resident_blocks(pf.device_kernel, device))));
    k.params = {args.data(pf.functor), args.data(pf.count())};
    return k;
  }
  // The other kinds run no kernel of their own (a conditional's condition kernel is part of
  // its graph).
  std::optional<KernelLaunch> operator()(const CopyPayload&) const { return std::nullopt; }
  std::optional<KernelLaunch> operator()(const FillPayload&) const { return std::nullopt; }
  std::optional<KernelLaunch> operator()(const HostPayload&) const { return std::nullopt; }
  std::optional<KernelLaunch> operator()(const EventRecordPayload&) const { return std::nullopt; }
  std::optional<KernelLaunch> operator()(const EventWaitPayload&) const { return std::nullopt; }
  std::optional<KernelLaunch> operator()(const NestedPayload&) const { return std::nullopt; }
  std::optional<KernelLaunch> operator()(const CapturePayload&) const { return std::nullopt; }
  std::optional<KernelLaunch> operator()(const BarrierPayload&) const { return std::nullopt; }
  std::optional<KernelLaunch> operator()(const ConditionalBodies&) const { return std::nullopt; }
  std::optional<KernelLaunch> operator()(const CollectivePayload&) const { return std::nullopt; }
  std::optional<KernelLaunch> operator()(const AllocPayload&) const { return std::nullopt; }
  std::optional<KernelLaunch> operator()(const FreePayload&) const { return std::nullopt; }
  std::optional<KernelLaunch> operator()(const ValueOp&) const { return std::nullopt; }
  // Sized as it runs: its kernel is a node of its graph (GraphForm).
  std::optional<KernelLaunch> operator()(const IndirectPayload&) const { return std::nullopt; }
};

// ---- Graph nodes ----

cuda::NodeSpec kernel_node(KernelLaunch& launch) {
  cuda::NodeSpec s = cuda::NodeSpec::of(cudaGraphNodeTypeKernel);
  cudaKernelNodeParamsV2& p = s.params.kernel;
  p.func = const_cast<void*>(launch.function);
  p.gridDim = launch.grid;
  p.blockDim = launch.block;
  p.sharedMemBytes = launch.shared_bytes;
  p.kernelParams = launch.params.data();
  return s;
}

struct GraphForm {
  GraphSite& site;

  template <class P>
  cudaGraphNode_t kernel(const P& payload) const {
    // Kernel parameters are copied when a node is made or set: the launch may be a local.
    KernelLaunch launch = *Launch{site.args(), site.device()}(payload);
    cuda::NodeSpec spec = kernel_node(launch);
    return site.place(spec);
  }
  cudaGraphNode_t operator()(const KernelPayload& p) const { return kernel(p); }
  cudaGraphNode_t operator()(const ParallelForPayload& p) const { return kernel(p); }
  cudaGraphNode_t operator()(const CopyPayload& p) const {
    const auto& c = site.args().get<CopySpec>(p.spec);
    cuda::NodeSpec spec;
    spec.copy = cuda::Copy1D{c.dst.data, c.src.data, c.dst.bytes};
    return site.place(spec);
  }
  cudaGraphNode_t operator()(const FillPayload& p) const {
    const auto& f = site.args().get<FillSpec>(p.spec);
    cuda::NodeSpec spec = cuda::NodeSpec::of(cudaGraphNodeTypeMemset);
    cudaMemsetParamsV2& m = spec.params.memset;
    m.dst = f.dst.data;
    m.value = f.value;
    m.elementSize = f.element_size;
    m.width = f.dst.bytes / f.element_size;
    m.height = 1;
    return site.place(spec);
  }
  cudaGraphNode_t operator()(const HostPayload& p) const {
    cuda::NodeSpec spec = cuda::NodeSpec::of(cudaGraphNodeTypeHost);
    spec.params.host.fn = &run_host_callback;
    spec.params.host.userData = site.host_callback(p.task);
    return site.place(spec);
  }
  cudaGraphNode_t operator()(const EventRecordPayload& p) const {
    cuda::NodeSpec spec = cuda::NodeSpec::of(cudaGraphNodeTypeEventRecord);
    spec.params.eventRecord.event = p.event->native();
    return site.place(spec);
  }
  cudaGraphNode_t operator()(const EventWaitPayload& p) const {
    cuda::NodeSpec spec = cuda::NodeSpec::of(cudaGraphNodeTypeWaitEvent);
    spec.params.eventWait.event = p.event->native();
    return site.place(spec);
  }
  cudaGraphNode_t operator()(const NestedPayload&) const { return site.body_graph(); }
  cudaGraphNode_t operator()(const CapturePayload& p) const { return site.captured_graph(p); }
  cudaGraphNode_t operator()(const BarrierPayload&) const {
    cuda::NodeSpec spec = cuda::NodeSpec::of(cudaGraphNodeTypeEmpty);
    return site.place(spec);
  }
  template <class P>
  cudaGraphNode_t conditional(const P& p) const {
    static constexpr cudaGraphConditionalNodeType type =
        P::branching == Branching::repeat ? cudaGraphCondTypeWhile
        : P::branching == Branching::once ? cudaGraphCondTypeIf
                                          : cudaGraphCondTypeSwitch;
    return site.conditional(type, p.condition);
  }
  cudaGraphNode_t operator()(const CollectivePayload& p) const {
    return site.collective_graph(p);
  }
  // CUDA's graph memory pool backs the allocation while the graph runs and reuses it across
  // launches and between allocations whose lifetimes do not overlap.
  cudaGraphNode_t operator()(const AllocPayload& p) const {
    cuda::NodeSpec spec = cuda::NodeSpec::of(cudaGraphNodeTypeMemAlloc);
    cudaMemAllocNodeParamsV2& a = spec.params.alloc;
    a.poolProps.allocType = cudaMemAllocationTypePinned;
    a.poolProps.location.type = cudaMemLocationTypeDevice;
    a.poolProps.location.id = site.device();
    a.bytesize = p.memory->bytes();
    const cudaGraphNode_t node = site.place(spec);
    site.allocated(a.dptr);  // an out parameter of the node's creation
    return node;
  }
  cudaGraphNode_t operator()(const FreePayload&) const {
    cuda::NodeSpec spec = cuda::NodeSpec::of(cudaGraphNodeTypeMemFree);
    spec.params.free.dptr = site.to_free();
    return site.place(spec);
  }
  cudaGraphNode_t operator()(const LoopPayload& p) const { return conditional(p); }
  cudaGraphNode_t operator()(const IfPayload& p) const { return conditional(p); }
  cudaGraphNode_t operator()(const IfElsePayload& p) const { return conditional(p); }
  cudaGraphNode_t operator()(const SwitchPayload& p) const { return conditional(p); }
  cudaGraphNode_t operator()(const WriteValuePayload& p) const { return memory_op_node(p); }
  cudaGraphNode_t operator()(const WaitValuePayload& p) const { return memory_op_node(p); }
  // The kernel's node starts at its largest grid; the dispatcher sizes it at every run.
  cudaGraphNode_t operator()(const IndirectPayload& p) const {
    const ArgumentStore& args = site.args();
    const auto& spec = args.get<IndirectSpec>(p.spec);
    KernelLaunch work;
    work.function = p.function;
    for (std::uint32_t i = 0; i < p.param_count; ++i) {
      work.params.push_back(args.data(p.first_param() + i));
    }
    IndirectDispatch dispatch{spec.source.data, spec.form, {}, {}};
    if (runs_items(spec.form)) {
      const std::uint64_t blocks = (spec.max_count + parallel_for_block - 1) / parallel_for_block;
      const unsigned max_blocks = static_cast<unsigned>(
          std::min<std::uint64_t>(blocks, resident_blocks(p.function, site.device())));
      work.block = dim3(parallel_for_block);
      work.grid = dim3(max_blocks);
      // parallel_for_kernel(F f, std::size_t n): n follows the functor, aligned.
      const std::size_t functor_bytes = args.size(p.first_param());
      const std::size_t offset =
          (functor_bytes + alignof(std::size_t) - 1) / alignof(std::size_t) * alignof(std::size_t);
      dispatch.count = {spec.max_count, parallel_for_block, max_blocks, offset,
                        static_cast<unsigned>(spec.source.element_size)};
    } else {
      const LaunchConfig& c = spec.limit;
      work.grid = dim3(c.grid.x, c.grid.y, c.grid.z);
      work.block = dim3(c.block.x, c.block.y, c.block.z);
      work.shared_bytes = static_cast<unsigned>(c.shared_bytes);
      dispatch.limit = work.grid;
    }
    cuda::NodeSpec node = kernel_node(work);
    return site.indirect(node, dispatch);
  }
  cudaGraphNode_t memory_op_node(const ValueOp& p) const {
    cuda::NodeSpec spec;
    spec.memory_op = memory_op(site.args().get<ValueSpec>(p.spec));
    return site.place(spec);
  }
};

// ---- Stream operations ----

struct StreamForm {
  const StreamSite& site;

  void kernel() const { launch_on_stream(*site.kernel, site.stream, site.launch, site.served); }
  void operator()(const KernelPayload&) const { kernel(); }
  void operator()(const ParallelForPayload&) const { kernel(); }
  void operator()(const CopyPayload& p) const {
    const auto& c = site.args.get<CopySpec>(p.spec);
    cuda::copy_async(c.dst.data, c.src.data, c.dst.bytes, site.stream, site.served);
  }
  void operator()(const FillPayload& p) const {
    const auto& f = site.args.get<FillSpec>(p.spec);
    cuda::fill_async(f.dst.data, f.value, f.element_size, f.dst.bytes / f.element_size,
                     site.stream, site.served);
  }
  void operator()(const HostPayload&) const {
    cuda::launch_host_func(site.stream, &run_host_callback, site.callback, site.served);
  }
  void operator()(const EventRecordPayload& p) const {
    cuda::record_event(p.event->native(), site.stream, site.served);
  }
  void operator()(const EventWaitPayload& p) const {
    cuda::wait_event(site.stream, p.event->native(), site.served);
  }
  void operator()(const NestedPayload&) const {}  // expanded in place: ordering only
  void operator()(const CapturePayload& p) const {
    // Library calls enqueue directly on the task's stream at each launch.
    try {
      p.task->run(site.stream);
    } catch (const Error&) {
      throw;
    } catch (...) {
      std::rethrow_exception(task_failure("capture", std::string(site.served.name)));
    }
  }
  void operator()(const BarrierPayload&) const {}  // ordering only
  // A conditional command is a graph of its own (its condition kernel, its conditional node
  // and its bodies), launched in order on the task's stream.
  void own_graph() const { cuda::launch_graph(site.graph, site.stream, site.served); }
  void operator()(const LoopPayload&) const { own_graph(); }
  void operator()(const IfPayload&) const { own_graph(); }
  void operator()(const IfElsePayload&) const { own_graph(); }
  void operator()(const SwitchPayload&) const { own_graph(); }
  void operator()(const CollectivePayload& p) const {
    enqueue_collective(p, site.args, site.stream, site.served);
  }
  // The executable's arena holds its transients from compile on: ordering only.
  void operator()(const AllocPayload&) const {}
  void operator()(const FreePayload&) const {}
  void operator()(const WriteValuePayload& p) const { memory_op(p); }
  void operator()(const WaitValuePayload& p) const { memory_op(p); }
  // Its dispatcher and kernel are a graph of its own, as a conditional command's are.
  void operator()(const IndirectPayload&) const { own_graph(); }
  void memory_op(const ValueOp& p) const {
    cuda::memory_op_async(detail::memory_op(site.args.get<ValueSpec>(p.spec)), site.stream,
                          site.served);
  }
};

}  // namespace

void check_runs_on_device(const Plan& plan, int device) {
  if (const auto breach = cuda_structure_breach(plan)) {
    throw Error(errc::unsupported,
                "command '" + breach->command + "' cannot run on this CUDA device: " + breach->why,
                {breach->command});
  }
  Check::all(plan, plan, device);
}

void check_values_on_device(const Plan& plan, std::span<const std::uint32_t> commands,
                            const Plan& root, int device) {
  for (const std::uint32_t c : commands) std::visit(Check(plan, c, root, device), plan.payload(c));
}

void check_device_memory(const Plan& plan, std::uint32_t c, const MemoryRange& r, int device) {
  Check(plan, c, plan, device).memory(r, traits(plan.kind(c)).reaches_peers);
}

std::optional<int> kernel_priority(const CommandRecord& command, int device,
                                   std::optional<int> inherited) {
  if (!command.hints.priority) return inherited;
  const PriorityRequest& p = *command.hints.priority;
  const Device d = Device::cuda(device);
  return p.native ? CudaQueue::clamped_priority(d, p.value)
                  : CudaQueue::native_priority_of(d, static_cast<Priority>(p.value));
}

std::optional<KernelLaunch> kernel_launch(const Payload& payload, const ArgumentStore& args,
                                          int device) {
  return std::visit(Launch{args, device}, payload);
}

cudaGraphNode_t add_graph_node(const Payload& payload, GraphSite& site) {
  return std::visit(GraphForm{site}, payload);
}

void launch_on_stream(const KernelLaunch& k, cudaStream_t stream,
                      const cuda::LaunchAttributes& launch, cuda::Served served) {
  void** params = const_cast<void**>(k.params.data());
  if (launch.any()) {
    cuda::launch_kernel(k.function, k.grid, k.block, params, k.shared_bytes, stream, launch,
                        served);
  } else {
    cuda::launch_kernel(k.function, k.grid, k.block, params, k.shared_bytes, stream, served);
  }
}

void enqueue_on_stream(const Payload& payload, const StreamSite& site) {
  std::visit(StreamForm{site}, payload);
}

}  // namespace cmdgraph::detail
