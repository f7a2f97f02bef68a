// Subscribing to CUPTI, and switching the activity kinds of work bits on and off: what the
// session asks of CUPTI, apart from what it does with the records CUPTI gives back.
#pragma once

#include "cuda/cupti_session.hpp"

#include <cupti.h>

#include <string>

namespace cmdgraph::detail::cuda::cupti {

/// Subscribes as "cmdgraph" with `on_callback` (graph node clones, graph launches) and
/// registers the activity buffer callbacks, then switches every kind on and off once, so a kind
/// CUPTI refuses shows now. On failure undoes what it did, says why in `why`, returns false.
bool subscribe(CUpti_CallbackFunc on_callback, CUpti_BuffersCallbackRequestFunc buffer_requested,
               CUpti_BuffersCallbackCompleteFunc buffer_completed, std::string& why);

/// Switches collection of the activity kinds of work bits `what` (work::kernels, ...) on or
/// off: the first failure, said, or an empty string.
std::string switch_kinds(unsigned what, bool on);

}  // namespace cmdgraph::detail::cuda::cupti
