// immediate_conflicts: the interval sweep over every byte range the commands touch, which
// finds each command's conflicts with the latest earlier commands touching the same bytes.
#include "plan/hazards.hpp"

#include "plan/plan.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>

namespace cmdgraph::detail {
namespace {

struct Toucher {
  std::uint32_t command, access;
};

// A maximal range of bytes touched alike so far: its last writer and the readers since.
struct Segment {
  std::uintptr_t end;
  std::optional<Toucher> writer;
  std::vector<Toucher> readers;
};

class Sweep {
 public:
  explicit Sweep(const AccessLists& access) : access_(access) {}

  // Records every conflict of command c with what came before it, then what c touches. One
  // conflict per pair of accesses: the segments a pair meets are merged into one range.
  void visit(std::uint32_t c, std::vector<Conflict>& out) {
    for (std::uint32_t a = 0; a < access_[c].size(); ++a) touch({c, a}, out);
  }

 private:
  void touch(Toucher t, std::vector<Conflict>& out) {
    const MemoryAccess& x = access_[t.command][t.access];
    if (x.begin >= x.end) return;
    found_.clear();
    split_at(x.begin);
    split_at(x.end);
    fill_gaps(x.begin, x.end);
    for (auto it = segments_.lower_bound(x.begin); it != segments_.end() && it->first < x.end;
         ++it) {
      Segment& s = it->second;
      const auto conflict = [&](Toucher earlier) {
        if (earlier.command == t.command) return;
        const std::uint64_t key = (std::uint64_t{earlier.command} << 32) | earlier.access;
        const auto [at, fresh] = found_.try_emplace(key, out.size());
        if (fresh) {
          out.push_back({earlier.command, t.command, earlier.access, t.access, it->first, s.end});
        } else {
          out[at->second].begin = std::min(out[at->second].begin, it->first);
          out[at->second].end = std::max(out[at->second].end, s.end);
        }
      };
      // A write after reads needs no pair with the writer before them: it is ordered after the
      // readers, and they after that writer.
      if (s.writer && !(x.writes() && !s.readers.empty())) conflict(*s.writer);
      if (x.writes()) {
        for (const Toucher& r : s.readers) conflict(r);
      } else if (s.readers.empty() || s.readers.back().command != t.command) {
        s.readers.push_back(t);
      }
    }
    // A write leaves one state over its whole range: one segment, so ranges do not splinter.
    if (x.writes()) {
      segments_.erase(segments_.lower_bound(x.begin), segments_.lower_bound(x.end));
      segments_.emplace(x.begin, Segment{x.end, t, {}});
    }
  }

  // Splits the segment that strictly contains `at`, so a segment starts there.
  void split_at(std::uintptr_t at) {
    auto it = segments_.upper_bound(at);
    if (it == segments_.begin()) return;
    --it;
    if (it->first < at && at < it->second.end) {
      Segment tail = it->second;
      it->second.end = at;
      segments_.emplace_hint(std::next(it), at, std::move(tail));
    }
  }

  // Makes untouched bytes of [begin, end) segments of their own, with no one behind them.
  void fill_gaps(std::uintptr_t begin, std::uintptr_t end) {
    std::uintptr_t at = begin;
    auto it = segments_.lower_bound(begin);
    while (at < end) {
      const std::uintptr_t next = (it == segments_.end() || it->first >= end) ? end : it->first;
      if (at < next) it = std::next(segments_.emplace_hint(it, at, Segment{next, {}, {}}));
      if (it == segments_.end() || it->first >= end) break;
      at = it->second.end;
      ++it;
    }
  }

  const AccessLists& access_;
  std::map<std::uintptr_t, Segment> segments_;  // by first byte; never overlapping
  std::unordered_map<std::uint64_t, std::size_t> found_;  // this access's conflicts so far
};

}  // namespace

const std::vector<MemoryAccess>& AccessLists::operator[](std::uint32_t c) const {
  return c == changed_ ? *replacement_ : plan_.command(c).access;
}

std::vector<Conflict> immediate_conflicts(const AccessLists& access,
                                          const std::vector<std::uint32_t>& sequence) {
  Sweep sweep(access);
  std::vector<Conflict> out;
  for (std::uint32_t c : sequence) sweep.visit(c, out);
  return out;
}

}  // namespace cmdgraph::detail
