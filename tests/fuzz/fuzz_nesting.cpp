// Nesting: chains of fresh buffers, each running the one below it (executed once or twice, as
// a loop body, as an if's body, as both branches of an if_else, as three cases of a switch) up
// to and past the library's bounds, where each refusal must come exactly at a bound; and one
// secondary run by several primaries.
#include "internals.hpp"
#include "session.hpp"

#include <algorithm>
#include <string>

namespace cmdgraph::fuzz {
namespace {

enum class Nesting { execute, loop, if_then, if_else, switch_on };

// Level i's way of running level i - 1, from the shape byte: all of one kind, or a mix of all.
Nesting nesting_of(std::uint8_t shape, std::size_t level) {
  static constexpr Nesting kinds[] = {Nesting::execute, Nesting::loop, Nesting::if_then,
                                      Nesting::if_else, Nesting::switch_on};
  const unsigned mix = shape & 3u;
  return mix < 3 ? kinds[mix] : kinds[level % 5];
}

// Commands `kind` adds around an expanded body: executed buffers sit between two joins.
std::uint64_t joins(Nesting kind) { return kind == Nesting::execute ? 2 : 0; }
// How often `kind` holds the level below: if_else as both branches, switch_on as three cases.
std::uint64_t copies(Nesting kind) {
  return kind == Nesting::if_else ? 2 : kind == Nesting::switch_on ? 3 : 1;
}

}  // namespace

void Session::nest(ByteReader& in) {
  const std::size_t levels = in.below(nesting_bound + 8);
  const std::uint8_t shape = in.byte();
  const std::size_t doubled = shape >> 2;  // levels up to this one execute the one below twice
  nested_.clear();
  CommandBuffer& leaf = nested_.emplace_back("level0");
  remember(leaf.host([this] { host_runs_.fetch_add(1, std::memory_order_relaxed); }));
  if (in.flip()) {
    remember(leaf.fill(host_view(memory_.bytes.data(), 16), 1, 16), &byte_fills_);
  }
  // The expanded size, without and with the joins (an estimate that brackets the library's).
  std::uint64_t below_low = leaf.size(), below_high = leaf.size();
  for (std::size_t level = 1; level <= levels; ++level) {
    CommandBuffer next("level" + std::to_string(level));
    const Nesting kind = nesting_of(shape, level);
    const int runs = kind == Nesting::execute && level <= doubled ? 2 : 1;
    std::uint64_t low = 0, high = 0;
    for (int r = 0; r < runs; ++r) {
      low += 1 + copies(kind) * below_low;
      high += 1 + copies(kind) * below_high + joins(kind);
      const bool past = level > nesting_bound || low > expansion_bound;
      const bool within = level <= nesting_bound && high <= expansion_bound;
      CommandBuffer& body = nested_.back();
      try {
        std::atomic<unsigned>& checks = loop_checks_.emplace_back(0);
        const FirstChecks condition{&checks, static_cast<unsigned>(level % 3)};
        switch (kind) {
          case Nesting::execute: remember(next.execute(body)); break;
          case Nesting::loop: remember(next.loop_while(body, condition)); break;
          case Nesting::if_then: remember(next.if_then(condition, body)); break;
          case Nesting::if_else: remember(next.if_else(condition, body, body)); break;
          case Nesting::switch_on:
            remember(next.switch_on(FirstSelects{&checks, condition.limit}, {body, body, body}));
            break;
        }
      } catch (const Error& e) {
        expect(e.code() == errc::invalid_argument, "a nesting refusal is not invalid_argument");
        expect(!within, "a nesting within the bounds was refused", e.what());
        return;
      }
      expect(!past, "a nesting past the bounds was accepted");
    }
    below_low = low;
    below_high = high;
    nested_.push_back(std::move(next));
  }
  if (in.flip()) remember(pick_buffer(in).execute(nested_.back()));
}

void Session::share(ByteReader& in) {
  CommandBuffer* secondary = nullptr;
  switch (in.below(3)) {
    case 0: secondary = &pick_buffer(in); break;  // one primary run by the other
    case 1:
      if (!nested_.empty()) {
        secondary = &nested_[in.below(nested_.size())];
        break;
      }
      [[fallthrough]];
    default: {
      secondary = &nested_.emplace_back("shared");
      remember(secondary->host([this] { host_runs_.fetch_add(1, std::memory_order_relaxed); }));
      remember(secondary->parallel_for(pick_count(in), pick_functor(in)), &parallel_fors_);
    }
  }
  const std::size_t times = 1 + in.below(3);
  for (CommandBuffer& primary : buffers_) {
    for (std::size_t t = 0; t < times; ++t) {
      try {
        if (t == 2) {
          std::atomic<unsigned>& checks = loop_checks_.emplace_back(0);
          remember(primary.loop_while(*secondary, FirstChecks{&checks, 2}));
        } else {
          remember(primary.execute(*secondary));
        }
        expect(secondary->sealed(), "an executed buffer was left open");
      } catch (const Error&) {  // itself, sealed, moved-from, past a bound
      }
    }
  }
}

}  // namespace cmdgraph::fuzz
