// RecordSite: what a payload's recording hook may use while it checks and stores the values
// of a command being recorded. The recording (record/) provides it; the hooks hold each kind's
// rules, so recording a kind of plain values needs no code of its own in record/.
#pragma once

#include "command/argument_store.hpp"

#include <string>

namespace cmdgraph::detail {

class RecordSite {
 public:
  virtual ~RecordSite() = default;
  /// Throws Error(invalid_argument) naming the command being recorded unless `problem` is
  /// empty; nothing is recorded then.
  virtual void require(const std::string& problem) const = 0;
  /// The recording's values, to store the command's in.
  virtual ArgumentStore& values() = 0;
};

}  // namespace cmdgraph::detail
