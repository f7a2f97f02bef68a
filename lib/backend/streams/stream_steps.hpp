// The streams backend's launch program: every task in the schedule's order, with its lane, the
// events it waits on and records, and a prepared kernel's launch copied in, as one array that a
// launch reads front to back. The CUDA calls between two tasks evict what the host read for
// the first, so each array a task's fields are gathered from costs a cache miss: on the H200,
// 4,000 kernels on one stream took 1.03-1.04x a hand-written loop's time that way (device run
// 3 of stop 29).
#pragma once

#include "backend/streams/stream_tasks.hpp"
#include "cuda/handles.hpp"
#include "plan/lanes.hpp"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace cmdgraph::detail {

struct StreamStep {
  // A kernel prepared at compile time when `function` is set, launched from here alone;
  // otherwise the task (its payload, callback or graph) is enqueued from the tasks.
  const void* function = nullptr;
  void** params = nullptr;
  dim3 grid, block;
  unsigned shared_bytes = 0;
  bool programmatic = false;  // programmatic stream serialization after the task before it
  bool fork_wait = false;     // waits for the launch's fork event first
  std::uint32_t task = 0;     // its index among the tasks
  std::uint32_t lane = 0;
  std::uint32_t waits_begin = 0, waits_end = 0;  // the events it waits on, in the program's
  cudaEvent_t record = nullptr;  // recorded after it when a task on another lane waits for it
  const char* name = "";         // the task's, for errors and NVTX
  std::uint32_t name_size = 0;

  std::string_view label() const noexcept { return {name, name_size}; }
};

class StreamProgram {
 public:
  StreamProgram() = default;
  /// `tasks` and `events` (one per task, set where the schedule records) must outlive it
  /// where they are, or be moved (their elements stay put).
  StreamProgram(const LaneSchedule& schedule, const std::vector<StreamTask>& tasks,
                const std::vector<cuda::Event>& events);

  const std::vector<StreamStep>& steps() const noexcept { return steps_; }
  std::span<const cudaEvent_t> waits(const StreamStep& step) const noexcept {
    return std::span(waits_).subspan(step.waits_begin, step.waits_end - step.waits_begin);
  }
  /// Task `task`'s kernel was prepared again (an update in place): its step launches that.
  void refresh(std::uint32_t task, const StreamTask& prepared);

 private:
  std::vector<StreamStep> steps_;
  std::vector<cudaEvent_t> waits_;
  std::vector<std::uint32_t> step_of_;  // task -> its step
};

}  // namespace cmdgraph::detail
