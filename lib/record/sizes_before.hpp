// What the buffers given up last on each thread held, by name, for the next buffer of that name
// to reserve (a frame recorded anew into a new buffer grows nothing while it records).
#pragma once

#include "record/recording.hpp"

namespace cmdgraph::detail {

/// Remembers what `rec` held for the next buffer of its name this thread makes: called as its
/// buffer gives it up.
void remember_sizes(const Recording& rec) noexcept;
/// Room in `rec` for what the last buffer of its name given up on this thread held.
void reserve_as_before(Recording& rec);

}  // namespace cmdgraph::detail
