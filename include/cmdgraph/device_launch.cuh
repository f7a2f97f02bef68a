// Launching an executable from a kernel: the device side of CompileOptions::device_launch.
// CUDA's device graph launch lives in the device runtime: a translation unit that includes
// this header is compiled with relocatable device code (nvcc -rdc=true) and linked with the
// device runtime (nvcc links cudadevrt itself when it links with -rdc=true).
#pragma once

#include <cmdgraph/executable.hpp>

#include <cuda_runtime.h>

#if defined(__CUDA_ARCH__) && !defined(__CUDACC_RDC__)
#error "cmdgraph/device_launch.cuh launches graphs through CUDA's device runtime: compile with -rdc=true"
#endif

namespace cmdgraph::device {

// Every function below launches once per call: call it from one thread, from a kernel that
// runs in a CUDA graph (a cuda_graph executable, or a graph launched from the device). Each
// returns CUDA's status: cudaSuccess, or why CUDA refused (a graph launched already and not
// yet ended: cudaErrorInvalidValue).

/// Launches `executable` now, beside the calling graph: the launching graph's launch ends
/// only once it has ended too (cudaStreamGraphFireAndForget).
__device__ inline cudaError_t launch(DeviceExecutable executable) {
  return cudaGraphLaunch(static_cast<cudaGraphExec_t>(executable.graph),
                         cudaStreamGraphFireAndForget);
}

/// Launches `executable` once the calling graph has ended, with all it launched now
/// (cudaStreamGraphTailLaunch): it sees every write of the calling graph.
__device__ inline cudaError_t launch_after(DeviceExecutable executable) {
  return cudaGraphLaunch(static_cast<cudaGraphExec_t>(executable.graph),
                         cudaStreamGraphTailLaunch);
}

/// Launches the graph the calling kernel runs in once more, after it ends (a tail launch of
/// cudaGetCurrentGraphExec()): a loop the device drives, one graph per step, no host trip.
__device__ inline cudaError_t launch_again() {
  return cudaGraphLaunch(cudaGetCurrentGraphExec(), cudaStreamGraphTailLaunch);
}

}  // namespace cmdgraph::device
