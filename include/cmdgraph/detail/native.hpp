// Forward declarations of CUDA's (and NCCL's) opaque handle types, so public headers need no
// CUDA toolkit.
#pragma once

struct CUstream_st;
struct CUevent_st;
struct CUgraph_st;
struct CUgraphExec_st;
struct ncclComm;

namespace cmdgraph {
/// cudaStream_t without including the CUDA runtime.
using NativeStream = CUstream_st*;
/// cudaEvent_t without including the CUDA runtime.
using NativeEvent = CUevent_st*;
/// cudaGraph_t without including the CUDA runtime.
using NativeGraph = CUgraph_st*;
/// ncclComm_t without including NCCL.
using NativeCommunicator = ncclComm*;
}  // namespace cmdgraph
