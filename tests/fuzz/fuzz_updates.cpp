// Updates: by handle (valid, default, moved-from, foreign, stale) with valid and invalid
// values and counts; by re-recorded buffer, of the same and of another structure; clones;
// executables destroyed while their launches are in flight; and a small valid program whose
// results are checked after each of these.
#include "internals.hpp"
#include "session.hpp"

#include <algorithm>
#include <array>
#include <vector>

namespace cmdgraph::fuzz {
namespace {

template <class T>
bool fits(const View<T>& v, std::size_t count) {
  return count > 0 && v.data() != nullptr && count <= v.size();
}

}  // namespace

void Session::update(ByteReader& in) {
  Executable& exe = pick_executable(in);
  switch (in.below(7)) {
    case 0: {
      const auto command = pick_typed(in, parallel_fors_);
      exe.update(command, pick_functor(in));
      break;
    }
    case 1: {
      const auto command = pick_typed(in, parallel_fors_);
      const std::size_t n = pick_count(in);
      exe.update(command, n, pick_functor(in));
      break;
    }
    case 2: {
      const auto command = pick_typed(in, copies_);
      const View<int> dst = pick_ints(in);
      const View<int> src = pick_ints(in);
      const std::size_t count = pick_extent<int>(in);
      exe.update(command, dst, src, count);
      expect(fits(dst, count) && fits(src, count), "a copy update beyond its views was taken");
      break;
    }
    case 3: {
      const auto command = pick_typed(in, fills_);
      const View<int> dst = pick_ints(in);
      const int value = in.byte();
      const std::size_t count = pick_extent<int>(in);
      exe.update(command, dst, value, count);
      expect(fits(dst, count), "a fill update beyond its view was taken");
      break;
    }
    case 4: {
      const auto command = pick_typed(in, byte_fills_);
      const View<std::uint8_t> dst = host_view(memory_.bytes.data(), in.below(17));
      const int value = static_cast<int>(in.byte()) * (in.flip() ? 2 : 1);
      const std::size_t count = pick_extent<std::uint8_t>(in);
      exe.update(command, dst, value, count);
      expect(value < 256, "a fill update of 256 or more into bytes was taken");
      expect(fits(dst, count), "a fill update beyond its view was taken");
      break;
    }
    case 5: {  // kernels never run on the host backend: every update of one is refused
      const auto command = pick_typed(in, kernels_);
      if (in.flip()) {
        exe.update(command, LaunchConfig{{static_cast<unsigned>(in.below(2))}, {1}, 0});
      } else if (in.flip()) {
        exe.update(command, 3, 4.0);
      } else {
        exe.update(command, std::int64_t{1} << 40, 4.0);
      }
      violated("a kernel update was taken by a host executable");
    }
    default: update_rerecorded(in);
  }
}

void Session::update_rerecorded(ByteReader& in) {
  Executable& exe = pick_executable(in);
  CommandBuffer& rerecorded = pick_buffer(in);
  const UpdateOptions options{in.flip()};
  std::uint64_t size = 0;
  try {
    size = expanded_size(rerecorded);
  } catch (const Error&) {  // a moved-from buffer: update() must refuse it too
  }
  if (size > max_compiled_size) return;
  const UpdateResult result = exe.update(rerecorded, options);
  expect(!result.reinstantiated || options.reinstantiate_if_needed,
         "an update re-instantiated without being allowed to");
  expect(result.reinstantiated == !result.reason.empty(), "an update's reason is wrong");
  expect(rerecorded.sealed(), "update() left its buffer open");
}

void Session::destroy(ByteReader& in) {
  Executable& exe = pick_executable(in);
  switch (in.below(4)) {
    case 0:
      settle();
      exe = Executable{};
      break;
    case 1: {
      settle();
      const Executable gone = std::move(exe);  // leaves a moved-from executable
      break;
    }
    case 2: std::swap(executables_[0], executables_[2]); break;
    default: {  // launched, then destroyed at once: the destructor waits for the launch
      const FenceRecord launched{exe.launch(pick_queue(in))};
      keep_fence(launched);
      settle();
      exe = Executable{};
      expect(launched.fence.ready(), "an executable died before its launch finished");
    }
  }
}

namespace {

struct Count {
  std::atomic<int>* counter;
  void operator()(std::size_t) const { counter->fetch_add(1, std::memory_order_relaxed); }
};

// A small valid program whose every result is known: a fill of part of `data`, a copy of
// that part, a parallel_for over `indices`, and a loop, an if, an if_else and a switch that
// count the runs of their bodies.
struct CheckedProgram {
  CheckedProgram(std::size_t n_, std::size_t offset_, std::size_t count_, unsigned loop_limit_,
                 unsigned if_limit_)
      : n(n_), offset(offset_), count(count_), loop_limit(loop_limit_), if_limit(if_limit_) {}

  std::size_t n, offset, count;
  unsigned loop_limit, if_limit;
  Buffer<int> data{Device::host(), n}, copied{Device::host(), n};
  std::vector<int> indices = std::vector<int>(n, -1);
  std::atomic<unsigned> loop_checks{0}, if_checks{0}, choice_checks{0}, case_checks{0};
  std::atomic<int> loop_passes{0}, if_passes{0}, then_runs{0}, else_runs{0};
  std::array<std::atomic<int>, 2> case_runs{0, 0};

  struct Handles {
    FillCommand<int> fill;
    ParallelForCommand<StoreIndex> index;
  };

  Handles record(CommandBuffer& cmd, int value, int base) {
    auto fill = cmd.fill(data.subview(offset, count), value, count);
    cmd.copy(copied.subview(offset, count), data.subview(offset, count), count).after(fill);
    auto index = cmd.parallel_for(n, StoreIndex{indices.data(), n, base});
    CommandBuffer loop_body("loop body"), if_body("if body"), then_body("then"), else_body("else");
    CommandBuffer case0("case0"), case1("case1");
    loop_body.parallel_for(1, Count{&loop_passes});
    if_body.parallel_for(1, Count{&if_passes});
    then_body.parallel_for(1, Count{&then_runs});
    else_body.parallel_for(1, Count{&else_runs});
    case0.parallel_for(1, Count{&case_runs[0]});
    case1.parallel_for(1, Count{&case_runs[1]});
    cmd.loop_while(loop_body, FirstChecks{&loop_checks, loop_limit});
    cmd.if_then(FirstChecks{&if_checks, if_limit}, if_body);
    cmd.if_else(FirstChecks{&choice_checks, if_limit}, then_body, else_body);
    cmd.switch_on(FirstSelects{&case_checks, loop_limit}, {case0, case1});
    return {fill, index};
  }

  // After `launches` launches in all.
  void check(int value, int base, const char* after, int launches) const {
    for (std::size_t i = offset; i < offset + count; ++i) {
      expect(data.data()[i] == value, "a fill's values are wrong", after);
      expect(copied.data()[i] == value, "a copy's values are wrong", after);
    }
    for (std::size_t i = 0; i < n; ++i) {
      expect(indices[i] == static_cast<int>(i) + base, "a parallel_for's values are wrong", after);
    }
    // The conditions hold for their first checks ever: the passes all ran in the first launch.
    expect(loop_passes == static_cast<int>(loop_limit), "a loop ran a wrong number of passes",
           after);
    expect(if_passes == static_cast<int>(if_limit), "an if ran its body wrongly", after);
    // if_else: then for its first checks, else ever after, one of them each launch.
    const int then_expected = std::min(launches, static_cast<int>(if_limit));
    expect(then_runs == then_expected, "an if_else ran its then branch wrongly", after);
    expect(else_runs == launches - then_expected, "an if_else ran its else branch wrongly",
           after);
    // switch: launch k selects case k - 1 while its checks last, then none; cases 0 and 1.
    for (int k = 0; k < 2; ++k) {
      const bool ran = launches > k && static_cast<int>(loop_limit) > k;
      expect(case_runs[k] == (ran ? 1 : 0), "a switch ran a case wrongly", after);
    }
  }
};

}  // namespace

void Session::check_results(ByteReader& in) {
  const std::size_t n = 1 + in.below(48);
  const std::size_t offset = in.below(n);
  const std::size_t count = 1 + in.below(n - offset);
  const auto loop_limit = static_cast<unsigned>(in.below(4));
  CheckedProgram p(n, offset, count, loop_limit, static_cast<unsigned>(in.below(2)));
  const int v1 = static_cast<int>(in.byte()) - 128, v2 = v1 + 1, v3 = v1 - 7, v4 = v1 * 3;
  const CompileOptions options{in.flip() ? Backend::host : Backend::automatic, 4, in.flip()};
  try {
    Queue queue(Device::host()), other(Device::host());
    CommandBuffer cmd("checked");
    const CheckedProgram::Handles handles = p.record(cmd, v1, 1);
    Executable exe = compile(cmd, Device::host(), options);
    TimelineSemaphore done(0);
    exe.launch(queue, {.signal = {{done, 1}}}).wait();
    expect(done.value() == 1, "a launch's signal is missing after its fence");
    p.check(v1, 1, "the first launch", 1);

    exe.update(handles.fill, p.data.subview(offset, p.count), v2, p.count);
    exe.update(handles.index, n, StoreIndex{p.indices.data(), n, 2});
    other.submit(exe, {.wait = {{done, 1}}}).wait();
    p.check(v2, 2, "updates by handle", 2);

    CommandBuffer again("checked");
    p.record(again, v3, 3);
    expect(!exe.update(again).reinstantiated, "an update of the same structure re-instantiated");
    exe.launch(queue).wait();
    p.check(v3, 3, "an update by a re-recorded buffer", 3);

    CommandBuffer changed("checked");
    p.record(changed, v4, 4);
    changed.barrier();
    try {
      exe.update(changed);
      violated("an update of another structure was taken in place");
    } catch (const Error& e) {
      expect(e.code() == errc::update_refused, "a refused update is not update_refused");
    }
    expect(exe.update(changed, {.reinstantiate_if_needed = true}).reinstantiated,
           "an update of another structure was not re-instantiated");
    Executable twin = exe.clone();
    twin.launch(other).wait();
    p.check(v4, 4, "a re-instantiating update, run by a clone", 4);
  } catch (const Error& e) {
    violated("a valid program failed", e.what());
  }
}

}  // namespace cmdgraph::fuzz
