// Recording's guards: one thread records into a buffer at a time, and no thread records while
// another reads it as a body.
#include "record/recording.hpp"

#include <cmdgraph/error.hpp>

namespace cmdgraph::detail {

// One locked instruction a guard, not two: taken by exchanging 0 for 1, given back by a plain
// release store (a command recorded with an edge takes two guards; their four locked
// instructions were 5-10% of recording it). The exchange orders the readers_ load after it, as
// ReadGuard's increment orders its users_ load: the two never both pass.
Recording::UseGuard::UseGuard(const Recording& rec, std::source_location where) : rec_(rec) {
  int idle = 0;
  const bool taken = rec_.users_.compare_exchange_strong(idle, 1);
  if (!taken || rec_.readers_.load() != 0) {
    if (taken) rec_.users_.store(0, std::memory_order_release);
    throw Error(errc::concurrent_use, "command buffer '" + rec_.name_ + "'" +
                                          " is being used by two threads at once");
  }
  rec_.site_ = where;
}

Recording::UseGuard::~UseGuard() {
  rec_.site_ = {};
  rec_.users_.store(0, std::memory_order_release);
}

Recording::ReadGuard::ReadGuard(const Recording& rec) : rec_(rec) {
  rec_.readers_.fetch_add(1);
  if (rec_.users_.load() != 0) {
    rec_.readers_.fetch_sub(1);
    throw Error(errc::concurrent_use, "command buffer '" + rec_.name_ + "'" +
                                          " is executed while another thread records into it");
  }
}

Recording::ReadGuard::~ReadGuard() { rec_.readers_.fetch_sub(1); }

}  // namespace cmdgraph::detail
