// Priority: how urgent a queue's or a command's work is, on the device's priority range.
#pragma once

namespace cmdgraph {

/// Urgency of a queue's or a command's work, mapped onto the device's stream priority range:
/// low is its least urgent priority, high its most urgent, normal half way.
enum class Priority : unsigned char { low, normal, high };

}  // namespace cmdgraph
