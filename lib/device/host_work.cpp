// HostWork: the tickets in flight and the frees deferred behind them, under one mutex. Host
// launches are coarse (one ticket per job a queue runs), so a lock per submission costs
// nothing a launch would notice; with nothing in flight a free runs at once.
#include "device/host_work.hpp"

#include <algorithm>
#include <deque>
#include <mutex>
#include <new>
#include <set>
#include <thread>
#include <vector>

namespace cmdgraph::detail {

std::size_t host_threads() noexcept {
  return std::max(2u, std::thread::hardware_concurrency());
}

namespace {

struct Deferred {
  std::uint64_t before;  // runs once every ticket below this has ended
  HostWork::Release release;
  void* p;
  int device;
};

struct InFlight {
  std::mutex mutex;
  std::set<std::uint64_t> tickets;
  std::deque<Deferred> deferred;  // in increasing `before`: tickets are handed out in order
  std::uint64_t next = 0;

  // Called with `mutex` held.
  bool ended_below(std::uint64_t before) const {
    return tickets.empty() || *tickets.begin() >= before;
  }
};

InFlight& in_flight() {
  static InFlight* state = new InFlight;  // never destroyed: memory may be freed during exit
  return *state;
}

}  // namespace

std::uint64_t HostWork::begin() {
  InFlight& s = in_flight();
  std::lock_guard lock(s.mutex);
  const std::uint64_t ticket = s.next;
  s.tickets.insert(ticket);
  ++s.next;
  return ticket;
}

void HostWork::end(std::uint64_t ticket) noexcept {
  InFlight& s = in_flight();
  std::vector<Deferred> ready;
  {
    std::lock_guard lock(s.mutex);
    s.tickets.erase(ticket);
    while (!s.deferred.empty() && s.ended_below(s.deferred.front().before)) {
      try {
        ready.push_back(s.deferred.front());
      } catch (const std::bad_alloc&) {
        break;  // the rest runs when the next job ends
      }
      s.deferred.pop_front();
    }
  }
  for (const Deferred& d : ready) d.release(d.p, d.device);
}

void HostWork::release_after_earlier(Release release, void* p, int device) noexcept {
  InFlight& s = in_flight();
  {
    std::lock_guard lock(s.mutex);
    if (!s.ended_below(s.next)) {
      try {
        s.deferred.push_back({s.next, release, p, device});
        return;
      } catch (const std::bad_alloc&) {
        // No room to defer: free now, as before this existed (the rarest of failures).
      }
    }
  }
  release(p, device);
}

}  // namespace cmdgraph::detail
