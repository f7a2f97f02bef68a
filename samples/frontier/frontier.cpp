// Breadth-first search where each level's work is sized by the frontier the level before it
// found, three ways: the whole search as one launch (a loop_while whose body expands the
// frontier with parallel_for_indirect commands, so the frontier's size never returns to the
// host); a host-driven loop (one launch per level, the size read back on the host between
// levels); and one launch checking every vertex at every level (a fixed maximal grid with early
// exit). Each search is checked against a BFS on the CPU, on two random graphs: one whose
// neighbours are anywhere (a few wide levels, like a social network) and one whose neighbours
// are near (hundreds of narrow levels, like a road network), where the host's round trips
// weigh more. [--vertices N] [--degree D] [--trials T] [--levels-per-pass L]
#include "sample.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <queue>
#include <random>
#include <vector>

using namespace cmdgraph;

namespace {

// Atomics on the host and on the GPU alike.
CMDGRAPH_HOST_DEVICE inline bool claim(int* depth, int level) {
#if defined(__CUDA_ARCH__)
  return atomicCAS(depth, -1, level) == -1;
#else
  int unvisited = -1;
  return std::atomic_ref<int>(*depth).compare_exchange_strong(unvisited, level);
#endif
}
// Reserves `n` places at the end of a frontier of *count vertices, returning the first.
CMDGRAPH_HOST_DEVICE inline std::uint32_t reserve(std::uint32_t* count, std::uint32_t n) {
#if defined(__CUDA_ARCH__)
  return atomicAdd(count, n);
#else
  return std::atomic_ref<std::uint32_t>(*count).fetch_add(n);
#endif
}

// The search's state in one place, device memory on a GPU: the depth of every vertex (-1 while
// unvisited), two frontiers used in turn, each with its size (what an indirect command reads),
// and the level being expanded (the fixed grid's alone).
struct Search {
  const std::uint32_t* offsets;  // CSR: vertex v's neighbours are edges[offsets[v], offsets[v+1])
  const std::uint32_t* edges;
  int* depth;
  std::uint32_t* frontiers;  // 2 * vertices: half h holds sizes[h] vertices
  std::uint32_t* sizes;      // 2
  int* level;
  std::uint32_t vertices;

  // Claims v's unvisited neighbours, one level deeper than v, appending them to half `into`.
  // The claims of up to `batch` neighbours go out together, before any is appended, so that
  // their trips to memory overlap (one after another, they were most of a narrow level's
  // time), and those won are appended with one reservation.
  CMDGRAPH_HOST_DEVICE void expand(std::uint32_t v, int into) const {
    constexpr std::uint32_t batch = 8;
    const int next_level = depth[v] + 1;
    const std::uint32_t end = offsets[v + 1];
    for (std::uint32_t first = offsets[v]; first < end; first += batch) {
      std::uint32_t neighbour[batch];
      std::uint32_t won = 0, claimed = 0;  // bit k of won: neighbour[k] claimed
      for (std::uint32_t k = 0; k < batch; ++k) {
        neighbour[k] = first + k < end ? edges[first + k] : 0;
        if (first + k < end && claim(depth + neighbour[k], next_level)) {
          won |= 1u << k;
          ++claimed;
        }
      }
      if (claimed == 0) continue;
      std::uint32_t at = into * vertices + reserve(sizes + into, claimed);
      for (std::uint32_t k = 0; k < batch; ++k) {
        if (won & 1u << k) frontiers[at++] = neighbour[k];
      }
    }
  }
};

// Level 0: the source alone, in half 0.
struct Start {
  Search s;
  std::uint32_t source;
  CMDGRAPH_HOST_DEVICE void operator()(std::size_t) const {
    s.depth[source] = 0;
    s.frontiers[0] = source;
    s.sizes[0] = 1;
    s.sizes[1] = 0;
    s.level[0] = 0;
  }
};
// The i-th vertex of the frontier in half `half`, its neighbours into the other half. The
// command was sized by sizes[half] before it ran, so item 0 empties it for the level after.
struct ExpandFrontier {
  Search s;
  int half;
  CMDGRAPH_HOST_DEVICE void operator()(std::size_t i) const {
    if (i == 0) s.sizes[half] = 0;
    s.expand(s.frontiers[half * s.vertices + i], 1 - half);
  }
};
// Every vertex, expanding those at the current level into half 1: the fixed grid.
struct ExpandAll {
  Search s;
  CMDGRAPH_HOST_DEVICE void operator()(std::size_t v) const {
    if (s.depth[v] == s.level[0]) s.expand(static_cast<std::uint32_t>(v), 1);
  }
};
// The fixed grid's next level: what it found in half 1 becomes the current size.
struct NextLevel {
  Search s;
  CMDGRAPH_HOST_DEVICE void operator()(std::size_t) const {
    s.sizes[0] = s.sizes[1];
    s.sizes[1] = 0;
    s.level[0] += 1;
  }
};
struct FrontierLeft {
  const std::uint32_t* size;
  CMDGRAPH_HOST_DEVICE bool operator()() const { return size[0] > 0; }
};

struct Graph {
  std::vector<std::uint32_t> offsets, edges;
};

// `vertices` vertices with `degree` random out-neighbours each, anywhere; deterministic.
Graph anywhere_graph(std::uint32_t vertices, std::uint32_t degree) {
  Graph g;
  std::mt19937 rng(2026);
  std::uniform_int_distribution<std::uint32_t> pick(0, vertices - 1);
  g.offsets.resize(vertices + 1);
  for (std::uint32_t v = 0; v <= vertices; ++v) g.offsets[v] = v * degree;
  g.edges.resize(std::size_t(vertices) * degree);
  for (auto& e : g.edges) e = pick(rng);
  return g;
}

// `vertices` vertices laid out in rows of about sqrt(vertices), each with `degree` random
// out-neighbours at most two rows and two columns away; deterministic. A search from vertex 0,
// a corner, crosses the grid in about a row's length / 2 levels.
Graph nearby_graph(std::uint32_t vertices, std::uint32_t degree) {
  Graph g;
  std::mt19937 rng(2026);
  std::uniform_int_distribution<int> step(-2, 2);
  const auto side = static_cast<std::int64_t>(std::ceil(std::sqrt(double(vertices))));
  g.offsets.resize(vertices + 1);
  for (std::uint32_t v = 0; v <= vertices; ++v) g.offsets[v] = v * degree;
  g.edges.reserve(std::size_t(vertices) * degree);
  for (std::int64_t v = 0; v < vertices; ++v) {
    for (std::uint32_t k = 0; k < degree;) {
      const std::int64_t row = v / side + step(rng), column = v % side + step(rng);
      const std::int64_t w = row * side + column;
      if (row < 0 || column < 0 || column >= side || w >= vertices || w == v) continue;
      g.edges.push_back(static_cast<std::uint32_t>(w));
      ++k;
    }
  }
  return g;
}

std::vector<int> cpu_bfs(const Graph& g, std::uint32_t source) {
  std::vector<int> depth(g.offsets.size() - 1, -1);
  std::queue<std::uint32_t> todo;
  depth[source] = 0;
  todo.push(source);
  while (!todo.empty()) {
    const std::uint32_t v = todo.front();
    todo.pop();
    for (std::uint32_t e = g.offsets[v]; e < g.offsets[v + 1]; ++e) {
      if (depth[g.edges[e]] < 0) {
        depth[g.edges[e]] = depth[v] + 1;
        todo.push(g.edges[e]);
      }
    }
  }
  return depth;
}

// The search's memory on `device`, the graph copied in.
struct Memory {
  Buffer<std::uint32_t> offsets, edges, frontiers, sizes;
  Buffer<int> depth, level;
  HostBuffer<std::uint32_t> sizes_on_host;
  HostBuffer<int> depth_on_host;
  Memory(Device device, const Graph& g)
      : offsets(device, g.offsets.size()), edges(device, g.edges.size()),
        frontiers(device, 2 * (g.offsets.size() - 1)), sizes(device, 2),
        depth(device, g.offsets.size() - 1), level(device, 1), sizes_on_host(2),
        depth_on_host(g.offsets.size() - 1) {
    CommandBuffer upload("upload");
    upload.copy(offsets, host_view(g.offsets.data(), g.offsets.size()), g.offsets.size());
    upload.copy(edges, host_view(g.edges.data(), g.edges.size()), g.edges.size());
    Queue queue(device);
    compile(upload, device).launch(queue).wait();
  }
  Search search() {
    return {offsets.data(), edges.data(), depth.data(), frontiers.data(), sizes.data(),
            level.data(), static_cast<std::uint32_t>(depth.size())};
  }
};

// Records the start of a search into `cmd`: every depth unvisited, then level 0.
Command record_start(CommandBuffer& cmd, Memory& m, std::uint32_t source) {
  auto unvisited = cmd.fill(m.depth, -1, m.depth.size()).named("unvisited");
  return cmd.parallel_for(1, Start{m.search(), source}).after(unvisited).named("start");
}

struct Settings {
  int trials = 5;           // searches timed, after one that warms up
  int levels_per_pass = 8;  // levels each pass of the one-launch search expands (even)
};

struct Outcome {
  double ms = 0;        // the median of the timed searches
  int round_trips = 0;  // times the host read a size back before launching again
};

// The whole search as one launch of a loop_while whose body is `pass`, repeated while the
// frontier in half 0 is not empty; timed after a warm-up.
Outcome search_in_one_launch(Device device, Queue& queue, Memory& m, std::uint32_t source,
                             int trials, CommandBuffer& pass) {
  CommandBuffer cmd("bfs");
  auto start = record_start(cmd, m, source);
  auto search = cmd.loop_while(pass, FrontierLeft{m.sizes.data()}).after(start).named("levels");
  cmd.copy(m.depth_on_host, m.depth, m.depth.size()).after(search).named("download");
  Executable exe = compile(cmd, device);
  exe.launch(queue).wait();  // warm-up
  std::vector<double> ms;
  for (int trial = 0; trial < trials; ++trial) {
    const sample::Stopwatch clock;
    exe.launch(queue).wait();
    ms.push_back(clock.ms());
  }
  // No frontier holds more than every vertex, the limit given.
  if (!exe.clamped_dispatches().empty()) std::printf("  a frontier was clamped\n");
  return {sample::percentile(ms, 50), 0};
}

// The frontier sizes each level's expansion on the device: no size returns to the host. A pass
// expands `levels_per_pass` levels (an even number), half 0 into half 1 and back, so that
// nothing runs between levels to swap the halves, and the loop's test runs once a pass; once a
// level finds nothing, the levels after it in the pass are sized 0 and run nothing.
Outcome one_launch(Device device, Queue& queue, Memory& m, std::uint32_t source,
                   const Settings& settings) {
  const std::size_t most = m.depth.size();
  CommandBuffer pass("levels");
  Command previous;
  for (int level = 0; level < settings.levels_per_pass; ++level) {
    const int half = level % 2;
    auto expand = pass.parallel_for_indirect(m.sizes.subview(half, 1), most,
                                             ExpandFrontier{m.search(), half})
                      .named(half == 0 ? "expand half 0" : "expand half 1");
    if (previous.valid()) expand.after(previous);
    previous = expand;
  }
  return search_in_one_launch(device, queue, m, source, settings.trials, pass);
}

// One launch per level: the host reads the frontier's size back and sizes the next launch.
Outcome host_driven(Device device, Queue& queue, Memory& m, std::uint32_t source,
                    const Settings& settings) {
  const int trials = settings.trials;
  CommandBuffer begin("bfs start");
  auto start = record_start(begin, m, source);
  begin.copy(m.sizes_on_host, m.sizes, 2).after(start);
  Executable first = compile(begin, device);
  CommandBuffer level("bfs level");
  auto expand = level.parallel_for(1, ExpandFrontier{m.search(), 0}).named("expand frontier");
  level.copy(m.sizes_on_host, m.sizes, 2).after(expand).named("sizes back");
  Executable next = compile(level, device);
  CommandBuffer end("bfs end");
  end.copy(m.depth_on_host, m.depth, m.depth.size());
  Executable last = compile(end, device);
  std::vector<double> ms;
  int round_trips = 0;
  for (int run = 0; run <= trials; ++run) {  // the first warms up
    const sample::Stopwatch clock;
    first.launch(queue).wait();
    round_trips = 0;
    for (int half = 0; m.sizes_on_host[half] > 0; half = 1 - half) {
      next.update(expand, std::size_t{m.sizes_on_host[half]}, ExpandFrontier{m.search(), half});
      next.launch(queue).wait();
      ++round_trips;
    }
    last.launch(queue).wait();
    if (run > 0) ms.push_back(clock.ms());
  }
  return {sample::percentile(ms, 50), round_trips};
}

// Every vertex checked at every level: the grid is the largest any level could need.
Outcome fixed_grid(Device device, Queue& queue, Memory& m, std::uint32_t source,
                   const Settings& settings) {
  CommandBuffer pass("level");
  auto expand = pass.parallel_for(m.depth.size(), ExpandAll{m.search()}).named("expand all");
  pass.parallel_for(1, NextLevel{m.search()}).after(expand).named("next level");
  return search_in_one_launch(device, queue, m, source, settings.trials, pass);
}

bool same_depths(const char* what, const HostBuffer<int>& got, const std::vector<int>& want,
                 int& levels) {
  levels = 0;
  for (std::size_t v = 0; v < want.size(); ++v) {
    if (got[v] != want[v]) {
      std::printf("  %s: vertex %zu at depth %d, expected %d\n", what, v, got[v], want[v]);
      return false;
    }
    levels = std::max(levels, want[v] + 1);
  }
  return true;
}

// The three searches over `graph` from vertex 0, each checked against the CPU's.
bool search_three_ways(const char* graph_name, const Graph& graph, Device device, Queue& queue,
                       const Settings& settings) {
  const std::vector<int> want = cpu_bfs(graph, 0);
  Memory memory(device, graph);
  struct Way {
    const char* name;
    Outcome (*run)(Device, Queue&, Memory&, std::uint32_t, const Settings&);
  };
  const Way ways[] = {{"one launch, indirect", one_launch},
                      {"host-driven, a launch per level", host_driven},
                      {"one launch, fixed grid", fixed_grid}};
  std::printf(" %s:\n", graph_name);
  bool ok = true;
  double ms[3] = {};
  for (int w = 0; w < 3; ++w) {
    for (std::size_t v = 0; v < want.size(); ++v) memory.depth_on_host[v] = -7;  // poison
    const Outcome outcome = ways[w].run(device, queue, memory, 0, settings);
    int levels = 0;
    const bool right = same_depths(ways[w].name, memory.depth_on_host, want, levels);
    ok = ok && right;
    ms[w] = outcome.ms;
    std::printf("  %-32s %9.3f ms, %4d levels, %6.3f ms per level, %d host round trips\n",
                ways[w].name, outcome.ms, levels, outcome.ms / levels, outcome.round_trips);
  }
  std::printf("  one launch, indirect: %.2fx the speed of the host-driven loop, %.2fx of the "
              "fixed grid\n", ms[1] / ms[0], ms[2] / ms[0]);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  const auto vertices = static_cast<std::uint32_t>(sample::flag(argc, argv, "--vertices", 1 << 20));
  const auto degree = static_cast<std::uint32_t>(sample::flag(argc, argv, "--degree", 8));
  Settings settings;
  settings.trials = static_cast<int>(sample::flag(argc, argv, "--trials", 5));
  settings.levels_per_pass = static_cast<int>(sample::flag(argc, argv, "--levels-per-pass", 8));
  if (vertices < 2 || settings.levels_per_pass < 2 || settings.levels_per_pass % 2 != 0) {
    std::fprintf(stderr, "usage: %s [--vertices N] [--levels-per-pass L] (N at least 2, L even)\n",
                 argv[0]);
    return 2;
  }
  const Device device = Device::best();
  std::printf("frontier: breadth-first search over %u vertices of %u random neighbours, on %s, "
              "medians of %d searches, %d levels a pass in one launch\n", vertices, degree,
              device.name().c_str(), settings.trials, settings.levels_per_pass);
  Queue queue(device);
  bool ok = search_three_ways("neighbours anywhere (few wide levels)",
                              anywhere_graph(vertices, degree), device, queue, settings);
  ok = search_three_ways("neighbours at most two rows and columns away (many narrow levels)",
                         nearby_graph(vertices, degree), device, queue, settings) && ok;
  return sample::verdict("frontier", ok);
}
