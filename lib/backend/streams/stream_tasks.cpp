// Enqueueing each command kind on a stream; 2- and 4-byte fills through the driver's memset.
#include "backend/streams/stream_tasks.hpp"

#include "cuda/check.hpp"
#include "cuda/driver.hpp"
#include "sync/event_state.hpp"


namespace cmdgraph::detail {
namespace {

void fill_on_stream(const FillSpec& f, cudaStream_t stream, const std::string& name) {
  const std::size_t count = f.dst.bytes / f.element_size;
  if (f.element_size == 1) {
    CMDGRAPH_CUDA(name, cudaMemsetAsync, f.dst.data, static_cast<int>(f.value), count, stream);
  } else {
    // The runtime has only byte-wise memset on streams.
    cuda::memset_async(f.dst.data, f.value, f.element_size, count, stream, name);
  }
}

}  // namespace

std::vector<StreamTask> prepare_tasks(const FlatPlan& flat, const Plan& root,
                                      const ArgumentStore& root_args, int device,
                                      HostCallbacks& callbacks, HostErrors* errors) {
  std::vector<StreamTask> tasks;
  tasks.reserve(flat.tasks.size());
  for (const FlatTask& t : flat.tasks) {
    StreamTask s{&t, t.plan == &root ? &root_args : &t.plan->recording->arguments(), {}, {}, nullptr};
    if (!t.is_join()) {
      s.name = command_label(*t.plan, t.command, root);
      const RecordedCommand& cmd = t.plan->command(t.command);
      if (cmd.kind == CommandKind::kernel || cmd.kind == CommandKind::parallel_for) {
        s.kernel = kernel_launch(*t.plan, t.command, *s.args, device);
      } else if (cmd.kind == CommandKind::host) {
        s.callback = callbacks.add(std::get<HostPayload>(cmd.payload).task, s.name, errors);
      }
    }
    tasks.push_back(std::move(s));
  }
  return tasks;
}

void refresh_kernel(StreamTask& task, int device) {
  task.kernel = kernel_launch(*task.task->plan, task.task->command, *task.args, device);
}

void enqueue(const StreamTask& s, cudaStream_t stream) {
  if (s.task->is_join()) return;
  const RecordedCommand& cmd = s.task->plan->command(s.task->command);
  switch (cmd.kind) {
    case CommandKind::kernel:
    case CommandKind::parallel_for: {
      const KernelLaunch& k = s.kernel;
      CMDGRAPH_CUDA(s.name, cudaLaunchKernel, k.function, k.grid, k.block,
                    const_cast<void**>(k.params.data()), std::size_t{k.shared_bytes}, stream);
      break;
    }
    case CommandKind::copy: {
      const auto& c = s.args->get<CopySpec>(std::get<CopyPayload>(cmd.payload).spec);
      CMDGRAPH_CUDA(s.name, cudaMemcpyAsync, c.dst.data, c.src.data, c.dst.bytes,
                    cudaMemcpyDefault, stream);
      break;
    }
    case CommandKind::fill:
      fill_on_stream(s.args->get<FillSpec>(std::get<FillPayload>(cmd.payload).spec), stream, s.name);
      break;
    case CommandKind::host:
      CMDGRAPH_CUDA(s.name, cudaLaunchHostFunc, stream, &run_host_callback, s.callback);
      break;
    case CommandKind::event_record:
      CMDGRAPH_CUDA(s.name, cudaEventRecord, std::get<EventPayload>(cmd.payload).event->native(),
                    stream);
      break;
    case CommandKind::event_wait:
      CMDGRAPH_CUDA(s.name, cudaStreamWaitEvent, stream,
                    std::get<EventPayload>(cmd.payload).event->native(), 0u);
      break;
    case CommandKind::capture:
      // Library calls enqueue directly on the task's stream at each launch.
      std::get<CapturePayload>(cmd.payload).task->run(stream);
      break;
    case CommandKind::nested:
    case CommandKind::barrier:
      break;  // ordering only
    case CommandKind::loop:
      break;  // refused by lower_to_streams
  }
}

}  // namespace cmdgraph::detail
