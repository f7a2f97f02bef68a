// Driver entry points, looked up once, called through the checked door's failure path.
#include "cuda/driver.hpp"

#include "cuda/check.hpp"

#include <cuda.h>

namespace cmdgraph::detail::cuda {
namespace {

template <class Fn>
Fn entry(const char* symbol) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found{};
  CMDGRAPH_CUDA(no_command, cudaGetDriverEntryPointByVersion, symbol, &fn, 12000u,
                cudaEnableDefault, &found);
  if (found != cudaDriverEntryPointSuccess || !fn) fail(cudaErrorSymbolNotFound, symbol, no_command);
  return reinterpret_cast<Fn>(fn);
}

// Driver results share their values with the runtime's errors for everything we call.
void check(CUresult r, const char* call, Served served) {
  if (r != CUDA_SUCCESS) fail(static_cast<cudaError_t>(r), call, served);
}

// Counted like every runtime call, so fault injection reaches these too.
template <class Call>
void counted(const char* name, Served served, Call&& call) {
  const cudaError_t injected = try_call([] { return cudaSuccess; });
  if (injected != cudaSuccess) fail(injected, name, served);
  check(call(), name, served);
}

}  // namespace

void memset_async(void* dst, std::uint32_t value, unsigned element_size, std::size_t count,
                  cudaStream_t stream, Served served) {
  using D16 = CUresult (*)(CUdeviceptr, unsigned short, size_t, CUstream);
  using D32 = CUresult (*)(CUdeviceptr, unsigned int, size_t, CUstream);
  static const D16 d16 = entry<D16>("cuMemsetD16Async");
  static const D32 d32 = entry<D32>("cuMemsetD32Async");
  const auto ptr = reinterpret_cast<CUdeviceptr>(dst);
  if (element_size == 2) {
    counted("cuMemsetD16Async", served,
            [&] { return d16(ptr, static_cast<unsigned short>(value), count, stream); });
  } else {
    counted("cuMemsetD32Async", served, [&] { return d32(ptr, value, count, stream); });
  }
}

bool supports_stream_memory_operations(int device) {
  int wait = 0;
  CMDGRAPH_CUDA(no_command, cudaDeviceGetAttribute, &wait,
                static_cast<cudaDeviceAttr>(CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS),
                device);
  return wait != 0;
}

void stream_wait_at_least(cudaStream_t stream, const std::uint64_t* address, std::uint64_t value,
                          Served served) {
  using Wait = CUresult (*)(CUstream, CUdeviceptr, cuuint64_t, unsigned int);
  static const Wait wait = entry<Wait>("cuStreamWaitValue64");
  counted("cuStreamWaitValue64", served, [&] {
    return wait(stream, reinterpret_cast<CUdeviceptr>(address), value, CU_STREAM_WAIT_VALUE_GEQ);
  });
}

void stream_write(cudaStream_t stream, std::uint64_t* address, std::uint64_t value,
                  Served served) {
  using Write = CUresult (*)(CUstream, CUdeviceptr, cuuint64_t, unsigned int);
  static const Write write = entry<Write>("cuStreamWriteValue64");
  counted("cuStreamWriteValue64", served, [&] {
    return write(stream, reinterpret_cast<CUdeviceptr>(address), value,
                 CU_STREAM_WRITE_VALUE_DEFAULT);
  });
}

namespace {

CUstreamBatchMemOpParams batch_param(const MemoryOp& op) {
  CUstreamBatchMemOpParams p{};
  const auto address = reinterpret_cast<CUdeviceptr>(op.address);
  const bool wide = op.width == 8;
  if (op.wait == MemoryOp::Wait::none) {
    p.writeValue.operation = wide ? CU_STREAM_MEM_OP_WRITE_VALUE_64 : CU_STREAM_MEM_OP_WRITE_VALUE_32;
    p.writeValue.address = address;
    if (wide) p.writeValue.value64 = op.value;
    else p.writeValue.value = static_cast<cuuint32_t>(op.value);
    p.writeValue.flags = CU_STREAM_WRITE_VALUE_DEFAULT;  // fenced: earlier writes land first
    return p;
  }
  p.waitValue.operation = wide ? CU_STREAM_MEM_OP_WAIT_VALUE_64 : CU_STREAM_MEM_OP_WAIT_VALUE_32;
  p.waitValue.address = address;
  if (wide) p.waitValue.value64 = op.value;
  else p.waitValue.value = static_cast<cuuint32_t>(op.value);
  p.waitValue.flags = op.wait == MemoryOp::Wait::at_least ? CU_STREAM_WAIT_VALUE_GEQ
                      : op.wait == MemoryOp::Wait::equal  ? CU_STREAM_WAIT_VALUE_EQ
                                                          : CU_STREAM_WAIT_VALUE_AND;
  return p;
}

CUcontext current_context(Served served) {
  using Current = CUresult (*)(CUcontext*);
  static const Current current = entry<Current>("cuCtxGetCurrent");
  CUcontext ctx = nullptr;
  counted("cuCtxGetCurrent", served, [&] { return current(&ctx); });
  return ctx;
}

}  // namespace

void memory_op_async(const MemoryOp& op, cudaStream_t stream, Served served) {
  using Batch = CUresult (*)(CUstream, unsigned int, CUstreamBatchMemOpParams*, unsigned int);
  static const Batch batch = entry<Batch>("cuStreamBatchMemOp");
  CUstreamBatchMemOpParams p = batch_param(op);
  counted("cuStreamBatchMemOp", served, [&] { return batch(stream, 1, &p, 0); });
}

cudaGraphNode_t add_memory_op_node(cudaGraph_t graph, std::span<const cudaGraphNode_t> deps,
                                   const MemoryOp& op, Served served) {
  using Add = CUresult (*)(CUgraphNode*, CUgraph, const CUgraphNode*, size_t,
                           const CUDA_BATCH_MEM_OP_NODE_PARAMS*);
  static const Add add = entry<Add>("cuGraphAddBatchMemOpNode");
  CUstreamBatchMemOpParams p = batch_param(op);
  const CUDA_BATCH_MEM_OP_NODE_PARAMS params{current_context(served), 1, &p, 0};
  CUgraphNode node = nullptr;
  counted("cuGraphAddBatchMemOpNode", served, [&] {
    return add(&node, graph, reinterpret_cast<const CUgraphNode*>(deps.data()), deps.size(),
               &params);
  });
  return node;
}

void set_memory_op_node(cudaGraphExec_t exec, cudaGraphNode_t node, const MemoryOp& op,
                        Served served) {
  using Set = CUresult (*)(CUgraphExec, CUgraphNode, const CUDA_BATCH_MEM_OP_NODE_PARAMS*);
  static const Set set = entry<Set>("cuGraphExecBatchMemOpNodeSetParams");
  CUstreamBatchMemOpParams p = batch_param(op);
  const CUDA_BATCH_MEM_OP_NODE_PARAMS params{current_context(served), 1, &p, 0};
  counted("cuGraphExecBatchMemOpNodeSetParams", served, [&] { return set(exec, node, &params); });
}

}  // namespace cmdgraph::detail::cuda
