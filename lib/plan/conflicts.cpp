// immediate_conflicts: the interval sweep over every byte range the commands touch, which
// finds each command's conflicts with the latest earlier commands touching the same bytes.
#include "plan/hazards.hpp"

#include "plan/cluster_reach.hpp"
#include "plan/plan.hpp"
#include "plan/radix_sort.hpp"

#include <algorithm>
#include <iterator>
#include <map>
#include <optional>
#include <utility>

namespace cmdgraph::detail {
namespace {

struct Toucher {
  std::uint32_t command, access;
};

constexpr std::uint32_t none = ~0u;

// A maximal range of bytes touched alike so far: its last writer and the readers since, the
// newest first in a list shared with the segments split from the same one. Accesses are
// named by their index among the visits.
struct Segment {
  std::uintptr_t begin, end;
  std::uint32_t writer = none;
  std::uint32_t readers = none;  // index of the newest in Sweep::readers_, or none
};

// One access to sweep: who, where, and its place in the sweep (conflicts come out by it).
// What the sweep reads of an access is copied here: looking it up again in its command's
// list, in cluster order, missed the cache at every access.
struct Visit {
  Toucher toucher;
  std::uintptr_t begin, end;
  std::uint32_t cluster;
  bool writes;
};

// The accesses in groups (clusters): a connected run of byte ranges, overlapping or cut from
// the same view (a buffer's disjoint slices stay together, so the commands of one cluster
// are those a careful hand chains with edges: see plan/cluster_reach.hpp), each group in
// sweep order. Accesses of different clusters cannot conflict, so each cluster is swept on
// its own, with a short sorted vector of segments instead of one map over all.
std::vector<Visit> clustered(const AccessLists& access, const std::vector<std::uint32_t>& sequence) {
  // The ranges go by address, carrying the ends along: reading them back from the visits in
  // address order would jump about the whole array.
  struct Range {
    std::uintptr_t begin, end, origin;
    std::uint32_t visit;
  };
  std::vector<Visit> visits;
  std::vector<Range> by_begin;
  visits.reserve(2 * sequence.size());
  by_begin.reserve(2 * sequence.size());
  for (std::uint32_t c : sequence) {
    const std::span<const MemoryAccess> list = access[c];
    for (std::uint32_t a = 0; a < list.size(); ++a) {
      const MemoryAccess& x = list[a];
      if (x.begin < x.end) {
        by_begin.push_back({x.begin, x.end, x.origin, static_cast<std::uint32_t>(visits.size())});
        visits.push_back({{c, a}, x.begin, x.end, 0, x.writes()});
      }
    }
  }
  radix_sort(by_begin, [](const Range& x) { return std::uint64_t{x.begin}; });
  std::vector<std::uint32_t> cluster_of(visits.size());
  std::uint32_t cluster = 0;
  std::uintptr_t reach = 0;
  for (std::size_t i = 0; i < by_begin.size(); ++i) {
    if (i > 0 && by_begin[i].begin >= reach && by_begin[i].origin != by_begin[i - 1].origin) {
      ++cluster;
    }
    reach = i == 0 ? by_begin[i].end : std::max(reach, by_begin[i].end);
    cluster_of[by_begin[i].visit] = cluster;
  }
  // By cluster, each in sweep order (a counting sort: clusters are numbered densely).
  std::vector<std::uint32_t> starts(cluster + 2, 0);
  for (const std::uint32_t k : cluster_of) ++starts[k + 1];
  for (std::size_t k = 1; k < starts.size(); ++k) starts[k] += starts[k - 1];
  std::vector<Visit> grouped(visits.size());
  for (std::uint32_t i = 0; i < visits.size(); ++i) {
    Visit& v = grouped[starts[cluster_of[i]]++] = visits[i];
    v.cluster = cluster_of[i];
  }
  return grouped;
}

// A cluster's segments in order: a sorted vector for small clusters (cheapest), a map for
// large ones (where shifting the vector at every access would make the sweep quadratic).
class SegmentVector {
 public:
  using iterator = std::vector<Segment>::iterator;
  static Segment& at(iterator it) { return *it; }
  void clear() { segments_.clear(); }
  // The segments that overlap [begin, end).
  std::pair<iterator, iterator> overlapping(std::uintptr_t begin, std::uintptr_t end) {
    const auto first = std::partition_point(segments_.begin(), segments_.end(),
                                            [&](const Segment& s) { return s.end <= begin; });
    return {first, std::partition_point(first, segments_.end(),
                                        [&](const Segment& s) { return s.begin < end; })};
  }
  // Moves the segments after `last` once (an erase then an insert moved them twice).
  void replace(iterator first, iterator last, const std::vector<Segment>& pieces) {
    const auto at = first - segments_.begin();
    const auto had = last - first, has = static_cast<std::ptrdiff_t>(pieces.size());
    if (has > had) {
      segments_.insert(last, static_cast<std::size_t>(has - had), Segment{});
    } else if (has < had) {
      segments_.erase(first + has, last);
    }
    std::copy(pieces.begin(), pieces.end(), segments_.begin() + at);
  }

 private:
  std::vector<Segment> segments_;
};

class SegmentMap {
 public:
  using iterator = std::map<std::uintptr_t, Segment>::iterator;
  static Segment& at(iterator it) { return it->second; }
  void clear() { segments_.clear(); }
  std::pair<iterator, iterator> overlapping(std::uintptr_t begin, std::uintptr_t end) {
    auto first = segments_.upper_bound(begin);
    if (first != segments_.begin() && std::prev(first)->second.end > begin) --first;
    return {first, segments_.lower_bound(end)};
  }
  void replace(iterator first, iterator last, const std::vector<Segment>& pieces) {
    auto hint = segments_.erase(first, last);
    for (auto it = pieces.rbegin(); it != pieces.rend(); ++it) hint = segments_.emplace_hint(hint, it->begin, *it);
  }

 private:
  std::map<std::uintptr_t, Segment> segments_;
};

// The sweep of one cluster at a time.
class Sweep {
 public:
  // With `reach`, each conflict says whether edges among its cluster's commands order it.
  Sweep(const std::vector<Visit>& visits, ClusterReach* reach)
      : visits_(visits), slot_(visits.size(), none), reach_(reach) {}
  // Clusters of more accesses than this keep their segments in a map.
  static constexpr std::size_t small_cluster = 256;

  void start_cluster(std::size_t accesses) {
    small_ = accesses <= small_cluster;
    small_ ? vector_.clear() : map_.clear();
    readers_.clear();
    if (reach_) reach_->start_cluster(accesses);
  }

  // Visit number `v` (an index into the visits).
  void touch(std::uint32_t v, std::vector<Conflict>& out) {
    small_ ? touch(vector_, v, out) : touch(map_, v, out);
  }

 private:

  // Appends every conflict of access x with what came before it in its cluster, one per
  // earlier access (the segments a pair meets merged into one range) in the order they are
  // first met, then records what x touches.
  template <class Segments>
  void touch(Segments& segments, std::uint32_t v, std::vector<Conflict>& out) {
    const Visit& x = visits_[v];
    // The segments [first, last) overlap x; pieces_ gets what replaces them.
    const auto [first, last] = segments.overlapping(x.begin, x.end);
    pieces_.clear();
    met_.clear();
    if (first != last && Segments::at(first).begin < x.begin) {
      pieces_.push_back(Segments::at(first));
      pieces_.back().end = x.begin;
    }
    std::uintptr_t at = x.begin;
    for (auto it = first;; ++it) {
      const std::uintptr_t next = it == last ? x.end : std::max(Segments::at(it).begin, x.begin);
      if (at < next) visit_part(v, Segment{at, next});  // untouched bytes
      if (it == last) break;
      Segment part = Segments::at(it);
      part.begin = std::max(part.begin, x.begin);
      part.end = std::min(part.end, x.end);
      at = part.end;
      visit_part(v, part);
    }
    if (first != last && Segments::at(std::prev(last)).end > x.end) {
      pieces_.push_back(Segments::at(std::prev(last)));
      pieces_.back().begin = x.end;
    }
    // A write leaves one state over its whole range: one segment, so ranges do not splinter.
    if (x.writes) {
      const auto after = std::find_if(pieces_.begin(), pieces_.end(),
                                      [&](const Segment& s) { return s.begin >= x.end; });
      pieces_.insert(after, Segment{x.begin, x.end, v});
    }
    segments.replace(first, last, pieces_);
    if (reach_) reach_->enter(x.toucher.command);
    emit(x.toucher, out);
  }

  // The part of x over one segment's bytes: its conflicts, and (for a read) the segment as x
  // leaves it.
  void visit_part(std::uint32_t v, Segment part) {
    const Visit& x = visits_[v];
    // One Met per earlier access: slot_ finds the one met already (emit clears it).
    const auto conflict = [&](std::uint32_t earlier) {
      if (visits_[earlier].toucher.command == x.toucher.command) return;
      std::uint32_t& slot = slot_[earlier];
      if (slot == none) {
        slot = static_cast<std::uint32_t>(met_.size());
        met_.push_back({earlier, part.begin, part.end});
      } else {
        met_[slot].begin = std::min(met_[slot].begin, part.begin);
        met_[slot].end = std::max(met_[slot].end, part.end);
      }
    };
    // A write after reads needs no pair with the writer before them: it is ordered after the
    // readers, and they after that writer.
    if (part.writer != none && !(x.writes && part.readers != none)) {
      conflict(part.writer);
    }
    if (x.writes) {
      for (std::uint32_t r = part.readers; r != none; r = readers_[r].next) {
        conflict(readers_[r].reader);
      }
    } else {
      if (part.readers == none ||
          visits_[readers_[part.readers].reader].toucher.command != x.toucher.command) {
        readers_.push_back({v, part.readers});
        part.readers = static_cast<std::uint32_t>(readers_.size() - 1);
      }
      pieces_.push_back(part);
    }
  }

  // The conflicts met, one per earlier access (its ranges merged), in the order first met.
  void emit(Toucher t, std::vector<Conflict>& out) {
    for (const Met& m : met_) {
      const Toucher earlier = visits_[m.earlier].toucher;
      out.push_back({earlier.command, t.command, earlier.access, t.access, m.begin, m.end,
                     reach_ && reach_->reaches(earlier.command, t.command)});
      slot_[m.earlier] = none;
    }
  }

  struct Met {
    std::uint32_t earlier;  // a visit
    std::uintptr_t begin, end;
  };

  struct Reader {
    std::uint32_t reader;  // a visit
    std::uint32_t next;  // the reader before it, or none
  };

  const std::vector<Visit>& visits_;
  std::vector<std::uint32_t> slot_;  // by visit: its index in met_ while met, else none
  ClusterReach* reach_;
  bool small_ = true;
  SegmentVector vector_;           // the segments, by first byte, never overlapping,
  SegmentMap map_;                 // in one of these
  std::vector<Reader> readers_;    // the lists of readers of this cluster's segments
  std::vector<Segment> pieces_;    // what replaces the segments an access overlaps
  std::vector<Met> met_;           // the current access's conflicts, one per segment met
};

}  // namespace

std::span<const MemoryAccess> AccessLists::operator[](std::uint32_t c) const {
  if (lists_) return (*lists_)[c];
  return c == changed_ ? replacement_ : plan_.access_of(c);
}

std::vector<Conflict> immediate_conflicts(const AccessLists& access,
                                          const std::vector<std::uint32_t>& sequence,
                                          const Adjacency* parents) {
  const std::vector<Visit> visits = clustered(access, sequence);
  std::optional<ClusterReach> reach;
  if (parents) reach.emplace(*parents, parents->vertices());
  Sweep sweep(visits, reach ? &*reach : nullptr);
  std::vector<Conflict> found;
  found.reserve(visits.size() + visits.size() / 2);
  for (std::size_t i = 0; i < visits.size(); ++i) {
    if (i == 0 || visits[i].cluster != visits[i - 1].cluster) {
      std::size_t size = 1;
      while (i + size < visits.size() && visits[i + size].cluster == visits[i].cluster) ++size;
      sweep.start_cluster(size);
    }
    sweep.touch(static_cast<std::uint32_t>(i), found);
  }
  return found;
}

void in_sweep_order(std::vector<Conflict>& conflicts, const std::vector<std::uint32_t>& sequence) {
  std::vector<std::uint32_t> place(sequence.size());
  for (std::uint32_t i = 0; i < sequence.size(); ++i) place[sequence[i]] = i;
  radix_sort(conflicts, [](const Conflict& k) { return std::uint64_t{k.second_access}; });
  radix_sort(conflicts, [&](const Conflict& k) { return std::uint64_t{place[k.second]}; });
}

}  // namespace cmdgraph::detail
