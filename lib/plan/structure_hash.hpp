// structure_hash: a hash of what an in-place update needs equal in a recording, for finding
// the executables that may take it (the executable cache).
#pragma once

#include "record/recording.hpp"

#include <cstdint>

namespace cmdgraph::detail {

/// A hash of `recording`'s structure as structural_difference sees it, read from the recording
/// before any plan is built: per command its kind, kernel, priority, transient size and bodies
/// (hashed alike, recursively), and the distinct edges of each kind. Recordings of one structure
/// hash alike (names, values and the order edges were recorded in do not count); recordings
/// of different structures may collide, so a hash only finds candidates. Edges inferred from
/// declared access depend on values and are not in it: the update that follows decides.
std::uint64_t structure_hash(const Recording& recording);

}  // namespace cmdgraph::detail
