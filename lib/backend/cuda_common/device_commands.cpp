// Device checks, kernel launch parameters (parallel_for sized by occupancy), fault suspects.
#include "backend/cuda_common/device_commands.hpp"

#include "cuda/check.hpp"
#include "cuda/runtime.hpp"
#include "sync/event_state.hpp"

#include <cmdgraph/error.hpp>

#include <algorithm>
#include <map>
#include <mutex>

namespace cmdgraph::detail {
namespace {

[[noreturn]] void refuse(const Plan& plan, std::uint32_t c, const Plan& root, errc code,
                         const std::string& why) {
  const std::string name = command_label(plan, c, root);
  throw Error(code, "command '" + name + "' cannot run on this CUDA device: " + why, {name});
}

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
  int per_sm = 0, sms = 0;
  CMDGRAPH_CUDA(cuda::no_command, cudaOccupancyMaxActiveBlocksPerMultiprocessor, &per_sm, kernel,
                static_cast<int>(parallel_for_block), std::size_t{0});
  CMDGRAPH_CUDA(cuda::no_command, cudaDeviceGetAttribute, &sms, cudaDevAttrMultiProcessorCount, device);
  const unsigned blocks = static_cast<unsigned>(std::max(1, per_sm * sms));
  cache.emplace(key, blocks);
  return blocks;
}

void collect_device_code(const Plan& plan, const Plan& root, std::vector<std::string>& out) {
  for (std::uint32_t c = 0; c < plan.size(); ++c) {
    switch (plan.command(c).kind) {
      case CommandKind::kernel:
      case CommandKind::parallel_for:
      case CommandKind::capture: out.push_back(command_label(plan, c, root)); break;
      case CommandKind::loop: out.push_back(command_label(plan, c, root)); [[fallthrough]];
      case CommandKind::nested: collect_device_code(*plan.nested[c], root, out); break;
      default: break;
    }
  }
}

}  // namespace

// Memory a command running on `device` may touch: host memory, and device memory of `device`;
// a copy may also reach another GPU (a peer copy), for which peer access is opened here.
static void check_memory_on(const Plan& plan, std::uint32_t c, const Plan& root,
                            const MemoryRange& r, int device) {
  if (r.space != MemorySpace::device || r.device == device) return;
  if (r.device < 0 || r.device >= cuda::device_count()) {
    refuse(plan, c, root, errc::device_mismatch,
           "it touches memory of cuda:" + std::to_string(r.device) + ", which does not exist");
  }
  if (plan.command(c).kind != CommandKind::copy) {
    refuse(plan, c, root, errc::device_mismatch,
           "it touches memory of cuda:" + std::to_string(r.device) + " but runs on cuda:" +
               std::to_string(device) + " (only copies reach another device)");
  }
  cuda::open_peer_access(device, r.device, command_label(plan, c, root));
}

// Where a command sits. A loop body on CUDA is a conditional node's body graph, which takes
// no host, event or capture nodes; an executed buffer becomes a child graph that CUDA clones,
// which must not hold a loop (its handle belongs to the graph it was made in).
struct Within {
  bool loop = false;
  bool executed = false;
};

static void check_plan_on_device(const Plan& plan, const Plan& root, const ArgumentStore& args,
                                 int device, Within within) {
  for (std::uint32_t c = 0; c < plan.size(); ++c) {
    const RecordedCommand& cmd = plan.command(c);
    switch (cmd.kind) {
      case CommandKind::parallel_for:
        if (!std::get<ParallelForPayload>(cmd.payload).device_kernel) {
          refuse(plan, c, root, errc::unsupported,
                 "its functor has no device version (record it in a translation unit compiled "
                 "by nvcc, with a __host__ __device__ call operator)");
        }
        break;
      case CommandKind::copy: {
        const auto& cp = args.get<CopySpec>(std::get<CopyPayload>(cmd.payload).spec);
        check_memory_on(plan, c, root, cp.dst, device);
        check_memory_on(plan, c, root, cp.src, device);
        break;
      }
      case CommandKind::fill:
        check_memory_on(plan, c, root,
                        args.get<FillSpec>(std::get<FillPayload>(cmd.payload).spec).dst, device);
        break;
      case CommandKind::host:
      case CommandKind::capture:
        if (within.loop) {
          refuse(plan, c, root, errc::unsupported,
                 "a loop body on a CUDA device holds no host tasks or captures (a conditional "
                 "node's body takes kernels, copies, fills, child graphs and loops)");
        }
        break;
      case CommandKind::event_record:
      case CommandKind::event_wait: {
        if (within.loop) {
          refuse(plan, c, root, errc::unsupported,
                 "a loop body on a CUDA device holds no event commands (a conditional node's "
                 "body takes kernels, copies, fills, child graphs and loops)");
        }
        // A device records only its own events but may wait for any GPU's, as a stream may.
        const Device d = std::get<EventPayload>(cmd.payload).event->device();
        const bool waits = cmd.kind == CommandKind::event_wait;
        if (!d.is_cuda() || (d.ordinal() != device && !waits)) {
          refuse(plan, c, root, errc::device_mismatch,
                 "its event belongs to " + d.name() +
                     (d.is_cuda() ? " (a device records only its own events)" : ""));
        }
        break;
      }
      case CommandKind::nested:
        check_plan_on_device(*plan.nested[c], root, plan.nested[c]->recording->arguments(), device,
                             {within.loop, true});
        break;
      case CommandKind::loop:
        if (within.executed) {
          refuse(plan, c, root, errc::unsupported,
                 "a loop inside an executed buffer is not supported on CUDA devices; record the "
                 "loop in the buffer that executes it");
        }
        if (!std::get<LoopPayload>(cmd.payload).device_kernel) {
          refuse(plan, c, root, errc::unsupported,
                 "its condition has no device version (record it in a translation unit compiled "
                 "by nvcc, with a __host__ __device__ call operator)");
        }
        check_plan_on_device(*plan.nested[c], root, plan.nested[c]->recording->arguments(), device,
                             {true, within.executed});
        break;
      case CommandKind::kernel:
      case CommandKind::barrier:
        break;
    }
  }
}

void check_runs_on_device(const Plan& plan, const ArgumentStore& args, int device) {
  check_plan_on_device(plan, plan, args, device, {});
}

void check_device_memory(const Plan& plan, std::uint32_t c, const MemoryRange& r, int device) {
  check_memory_on(plan, c, plan, r, device);
}

KernelLaunch kernel_launch(const Plan& plan, std::uint32_t c, const ArgumentStore& args,
                           int device) {
  KernelLaunch k;
  const RecordedCommand& cmd = plan.command(c);
  if (const auto* kp = std::get_if<KernelPayload>(&cmd.payload)) {
    const auto& config = args.get<LaunchConfig>(kp->config);
    k.function = kp->function;
    k.grid = dim3(config.grid.x, config.grid.y, config.grid.z);
    k.block = dim3(config.block.x, config.block.y, config.block.z);
    k.shared_bytes = static_cast<unsigned>(config.shared_bytes);
    for (std::uint32_t i = 0; i < kp->param_count; ++i) k.params.push_back(args.data(kp->first_param + i));
    return k;
  }
  const auto& pf = std::get<ParallelForPayload>(cmd.payload);
  const std::size_t n = args.get<std::size_t>(pf.count());
  const std::size_t needed = (n + parallel_for_block - 1) / parallel_for_block;
  k.function = pf.device_kernel;
  k.block = dim3(parallel_for_block);
  k.grid = dim3(static_cast<unsigned>(
      std::min<std::size_t>(needed, resident_blocks(pf.device_kernel, device))));
  k.params = {args.data(pf.functor), args.data(pf.count())};
  return k;
}

std::vector<std::string> device_code_commands(const Plan& plan) {
  std::vector<std::string> out;
  collect_device_code(plan, plan, out);
  return out;
}

std::uint32_t count_host_tasks(const Plan& plan) {
  std::uint32_t n = 0;
  for (std::uint32_t c = 0; c < plan.size(); ++c) {
    if (plan.command(c).kind == CommandKind::host) ++n;
    if (plan.nested[c]) n += count_host_tasks(*plan.nested[c]);
  }
  return n;
}

}  // namespace cmdgraph::detail
