// Synchronisation: timeline semaphores grown, moved and destroyed while submissions use them;
// submissions that wait and signal; host signals and bounded waits; fences waited on, polled,
// continued with callbacks (that wait in turn) and turned into futures; events across two
// host queues; queues replaced while work is pending.
#include "internals.hpp"
#include "session.hpp"

#include <exception>
#include <future>
#include <limits>
#include <utility>

namespace cmdgraph::fuzz {
namespace {

constexpr std::uint64_t top = std::numeric_limits<std::uint64_t>::max();

std::uint64_t current_value(const TimelineSemaphore& s) {
  try {
    return s.value();
  } catch (const Error&) {  // moved-from
    return 0;
  }
}

// A value to wait for or signal, around the semaphore's current one: equal, growing (the
// common case), lower, small, at the top of the range.
std::uint64_t pick_value(ByteReader& in, std::uint64_t now) {
  switch (in.below(8)) {
    case 0: return now;
    case 1: return now + 2 + in.below(8);
    case 2: return now == 0 ? 0 : now - 1;
    case 3: return in.below(3);
    case 4: return top - in.below(2);
    default: return now + 1;
  }
}

}  // namespace

TimelineSemaphore& Session::pick_semaphore(ByteReader& in) {
  if (semaphores_.empty()) semaphores_.emplace_back(0);
  return semaphores_[in.below(semaphores_.size())];
}

SemaphoreValue Session::pick_semaphore_value(ByteReader& in) {
  const TimelineSemaphore& s = pick_semaphore(in);
  return SemaphoreValue(s, pick_value(in, current_value(s)));
}

void Session::observe_value(const TimelineSemaphore& semaphore) {
  const std::uint64_t now = semaphore.value();
  const auto state = SemaphoreValue(semaphore, 0).semaphore;
  for (SemaphoreValue& seen : observed_) {
    if (seen.semaphore != state) continue;
    expect(now >= seen.value, "a timeline semaphore's value went down");
    seen.value = now;
    return;
  }
  observed_.emplace_back(semaphore, now);
}

void Session::semaphore_op(ByteReader& in) {
  switch (in.below(9)) {
    case 0: {  // may reallocate the vector: every semaphore moves while submissions use it
      static constexpr std::uint64_t initial[] = {0, 1, 7, top - 1, top};
      if (semaphores_.size() < max_semaphores) semaphores_.emplace_back(initial[in.below(5)]);
      break;
    }
    case 1:  // destroyed while in use, and the ones behind it moved
      if (!semaphores_.empty()) {
        semaphores_.erase(semaphores_.begin() + static_cast<long>(in.below(semaphores_.size())));
      }
      break;
    case 2: {
      const TimelineSemaphore taken = std::move(pick_semaphore(in));  // leaves a moved-from one
      break;
    }
    case 3: {
      TimelineSemaphore& to = pick_semaphore(in);
      to = std::move(pick_semaphore(in));  // possibly itself
      break;
    }
    case 4:
      if (in.flip()) {
        semaphores_.shrink_to_fit();
      } else if (semaphores_.size() >= 2) {
        std::swap(semaphores_.front(), semaphores_.back());
      }
      break;
    case 5: {
      TimelineSemaphore& s = pick_semaphore(in);
      const std::uint64_t value = pick_value(in, current_value(s));
      s.signal(value);
      expect(s.value() >= value, "a host signal did not reach its value");
      observe_value(s);
      break;
    }
    case 6: {
      const TimelineSemaphore& s = pick_semaphore(in);
      const std::uint64_t value = pick_value(in, current_value(s));
      const bool reached = s.wait(value, pick_timeout(in));
      expect(!reached || s.value() >= value, "a semaphore wait returned before its value");
      break;
    }
    case 7: {  // no timeout at all, for values already reached: returns at once
      const TimelineSemaphore& s = pick_semaphore(in);
      const std::uint64_t value = current_value(s) - std::min<std::uint64_t>(in.below(2),
                                                                              current_value(s));
      if (in.flip()) {
        s.wait(value);
      } else {
        expect(s.wait(value, std::chrono::nanoseconds::max()),
               "a semaphore wait without a deadline timed out on a reached value");
      }
      break;
    }
    default: observe_value(pick_semaphore(in));
  }
}

void Session::submit(ByteReader& in) {
  Executable& exe = pick_executable(in);
  Queue& queue = pick_queue(in);
  SubmitInfo info;
  for (std::size_t n = in.below(3); n > 0; --n) info.wait.push_back(pick_semaphore_value(in));
  for (std::size_t n = in.below(3); n > 0; --n) info.signal.push_back(pick_semaphore_value(in));
  const Fence fence = in.flip() ? queue.submit(exe, info) : exe.launch(queue, info);
  for (const SemaphoreValue& s : info.wait) {
    expect(s.semaphore != nullptr, "a submission waiting on a moved-from semaphore was taken");
    waits_.push_back(s);
  }
  for (const SemaphoreValue& s : info.signal) {
    expect(s.semaphore != nullptr, "a submission signalling a moved-from semaphore was taken");
    for (const SemaphoreValue& w : info.wait) {
      expect(s.semaphore != w.semaphore || s.value > w.value,
             "a submission signalling at or below its own wait was taken");
    }
  }
  if (waits_.size() > 32) std::erase_if(waits_, [](const SemaphoreValue& w) { return reached(w); });
  keep_fence({fence});
}

void Session::settle() {
  for (const SemaphoreValue& wait : waits_) release(wait);
  waits_.clear();
}

FenceRecord Session::pick_fence(ByteReader& in) {
  const std::size_t k = in.below(fences_.size() + 1);
  return k < fences_.size() ? fences_[k] : FenceRecord{};
}

void Session::keep_fence(const FenceRecord& record) {
  if (fences_.size() < max_fences) {
    fences_.push_back(record);
  } else {
    fences_[kept_fences_ % max_fences] = record;
  }
  ++kept_fences_;
}

bool Session::wait_fence_for(const FenceRecord& record, std::chrono::nanoseconds timeout) {
  const bool was_ready = record.fence.ready();
  try {
    const bool done = record.fence.wait_for(timeout);
    expect(done || !was_ready, "wait_for timed out on a ready fence");
    expect(!done || record.fence.ready(), "a fence wait_for saw finished is not ready");
    return done;
  } catch (const OnPurpose&) {
    expect(record.raw, "a callback's own exception came back from a fence without callbacks");
    return true;
  }
}

void Session::fence_op(ByteReader& in) {
  const FenceRecord record = pick_fence(in);
  switch (in.below(5)) {
    case 0: wait_fence_for(record, pick_timeout(in)); break;
    case 1: static_cast<void>(record.fence.ready()); break;
    case 2: {
      std::future<void> future = in.flip() ? record.fence.to_future()
                                           : static_cast<std::future<void>>(record.fence);
      if (future.wait_for(pick_timeout(in)) != std::future_status::ready) break;
      try {
        future.get();
      } catch (const OnPurpose&) {
        expect(record.raw, "a callback's own exception came back from a future without one");
      }
      break;
    }
    case 3:
      settle();
      expect(wait_fence_for(record, std::chrono::nanoseconds::max()),
             "a fence wait without a deadline timed out");
      break;
    default:
      settle();
      try {
        record.fence.wait();
      } catch (const OnPurpose&) {
        expect(record.raw, "a callback's own exception came back from a fence without one");
      }
      expect(record.fence.ready(), "a fence is not ready after its wait returned");
  }
}

void Session::then(ByteReader& in) {
  const FenceRecord source = pick_fence(in);
  const FenceRecord other = pick_fence(in);
  const std::chrono::nanoseconds timeout = pick_timeout(in);
  FenceRecord next{{}, source.raw};
  switch (in.below(7)) {
    case 0: next.fence = source.fence.then([] {}); break;
    case 1:
      next.fence = source.fence.then([](std::exception_ptr error) {
        if (!error) return;
        try {
          std::rethrow_exception(error);
        } catch (const Error&) {
        } catch (const OnPurpose&) {
        } catch (...) {
          violated("a fence's error is neither a cmdgraph::Error nor a callback's own");
        }
      });
      break;
    case 2:  // waits, bounded, on another fence from the callback thread
      next.fence = source.fence.then([other, timeout] {
        static_cast<void>(other.fence.wait_for(timeout));
      });
      next.raw = next.raw || other.raw;
      break;
    case 3:
      next.fence = source.fence.then([] { throw OnPurpose{}; });
      next.raw = true;
      break;
    case 4:
      next.fence = source.fence.then([other] { static_cast<void>(other.fence.then([] {})); });
      break;
    case 5:
      next.fence = source.fence.then([other, timeout] {
        static_cast<void>(other.fence.to_future().wait_for(timeout));
      });
      break;
    default:
      next.fence = source.fence.then([other] { static_cast<void>(other.fence.ready()); });
  }
  callbacks_.push_back(next.fence);
  keep_fence(next);
}

void Session::queue_op(ByteReader& in) {
  Queue& queue = pick_queue(in);
  switch (in.below(9)) {
    case 0: queue.record(pick_event(in)); break;
    case 1: queue.wait(pick_event(in)); break;
    case 2: static_cast<void>(queue.wait_for(pick_timeout(in))); break;
    case 3:
      settle();
      queue.wait();
      break;
    case 4: {  // replaced while its work is pending: the old one waits for it
      static constexpr Priority priorities[] = {Priority::low, Priority::normal, Priority::high,
                                                static_cast<Priority>(3)};
      Queue fresh(Device::host(), priorities[in.below(4)]);
      settle();
      queue = std::move(fresh);
      break;
    }
    case 5: {
      settle();
      const Queue taken = std::move(queue);  // leaves a moved-from queue
      break;
    }
    case 6: std::swap(queues_[0], queues_[1]); break;
    case 7: {
      Event& event = pick_event(in);
      if (in.flip()) {
        event = Event(Device::host(), EventOptions{in.flip()});
      } else {
        const Event taken = std::move(event);  // leaves a moved-from event
      }
      break;
    }
    default: {
      const Event& a = pick_event(in);
      const Event& b = pick_event(in);
      static_cast<void>(a.ready());
      settle();  // both wait for the latest record
      if (in.flip()) {
        a.wait();
        expect(a.ready(), "an event is not ready after its wait returned");
      } else {
        expect(Event::elapsed(a, b).count() >= 0, "Event::elapsed is negative");
      }
    }
  }
}

}  // namespace cmdgraph::fuzz
