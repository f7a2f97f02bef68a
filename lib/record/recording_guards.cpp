// Recording's guards: one thread records into a buffer at a time, and no thread records while
// another reads it as a body.
#include "record/recording.hpp"

#include <cmdgraph/error.hpp>

namespace cmdgraph::detail {

void Recording::refuse_use(bool taken) const {
  if (taken) users_.store(0, std::memory_order_release);
  throw Error(errc::concurrent_use,
              "command buffer '" + name_ + "'" + " is being used by two threads at once");
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
