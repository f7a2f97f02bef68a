// Breadth-first search where each level's work is sized by the frontier the level before it
// found, three ways: the whole search as one launch (a loop_while whose body expands the
// frontier with a parallel_for_indirect, so the frontier's size never returns to the host);
// a host-driven loop (one launch per level, the size read back on the host between levels);
// and one launch checking every vertex at every level (a fixed maximal grid with early exit).
// Each search is checked against a BFS on the CPU. [--vertices N] [--degree D]
#include "sample.hpp"

#include <atomic>
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
CMDGRAPH_HOST_DEVICE inline std::uint32_t append(std::uint32_t* count) {
#if defined(__CUDA_ARCH__)
  return atomicAdd(count, 1u);
#else
  return std::atomic_ref<std::uint32_t>(*count).fetch_add(1);
#endif
}

// The search's state in one place, device memory on a GPU: the depth of every vertex (-1 while
// unvisited), two frontiers used in turn, the size of the current one (what the indirect
// command reads), the size of the next one as it grows, and the level being expanded.
struct Search {
  const std::uint32_t* offsets;  // CSR: vertex v's neighbours are edges[offsets[v], offsets[v+1])
  const std::uint32_t* edges;
  int* depth;
  std::uint32_t* frontiers;  // 2 * vertices: level L reads half L % 2 and fills the other
  std::uint32_t* size;
  std::uint32_t* next_size;
  int* level;
  std::uint32_t vertices;

  CMDGRAPH_HOST_DEVICE const std::uint32_t* current() const {
    return frontiers + (level[0] % 2) * vertices;
  }
  CMDGRAPH_HOST_DEVICE std::uint32_t* next() const {
    return frontiers + ((level[0] + 1) % 2) * vertices;
  }
  // Claims v's unvisited neighbours for the next level, appending them to the next frontier.
  CMDGRAPH_HOST_DEVICE void expand(std::uint32_t v) const {
    for (std::uint32_t e = offsets[v]; e < offsets[v + 1]; ++e) {
      const std::uint32_t w = edges[e];
      if (claim(depth + w, level[0] + 1)) next()[append(next_size)] = w;
    }
  }
};

// Level 0: the source alone.
struct Start {
  Search s;
  std::uint32_t source;
  CMDGRAPH_HOST_DEVICE void operator()(std::size_t) const {
    s.depth[source] = 0;
    s.frontiers[0] = source;
    s.size[0] = 1;
    s.next_size[0] = 0;
    s.level[0] = 0;
  }
};
// The i-th vertex of the current frontier.
struct ExpandFrontier {
  Search s;
  CMDGRAPH_HOST_DEVICE void operator()(std::size_t i) const { s.expand(s.current()[i]); }
};
// Every vertex, expanding those at the current level: the fixed grid.
struct ExpandAll {
  Search s;
  CMDGRAPH_HOST_DEVICE void operator()(std::size_t v) const {
    if (s.depth[v] == s.level[0]) s.expand(static_cast<std::uint32_t>(v));
  }
};
// The next frontier becomes the current one.
struct Advance {
  Search s;
  CMDGRAPH_HOST_DEVICE void operator()(std::size_t) const {
    s.size[0] = s.next_size[0];
    s.next_size[0] = 0;
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

// `vertices` vertices with `degree` random out-neighbours each, deterministic.
Graph random_graph(std::uint32_t vertices, std::uint32_t degree) {
  Graph g;
  std::mt19937 rng(2026);
  std::uniform_int_distribution<std::uint32_t> pick(0, vertices - 1);
  g.offsets.resize(vertices + 1);
  for (std::uint32_t v = 0; v <= vertices; ++v) g.offsets[v] = v * degree;
  g.edges.resize(std::size_t(vertices) * degree);
  for (auto& e : g.edges) e = pick(rng);
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
  Buffer<std::uint32_t> offsets, edges, frontiers, size, next_size;
  Buffer<int> depth, level;
  HostBuffer<std::uint32_t> size_on_host;
  HostBuffer<int> depth_on_host;
  Memory(Device device, const Graph& g)
      : offsets(device, g.offsets.size()), edges(device, g.edges.size()),
        frontiers(device, 2 * (g.offsets.size() - 1)), size(device, 1), next_size(device, 1),
        depth(device, g.offsets.size() - 1), level(device, 1), size_on_host(1),
        depth_on_host(g.offsets.size() - 1) {
    CommandBuffer upload("upload");
    upload.copy(offsets, host_view(g.offsets.data(), g.offsets.size()), g.offsets.size());
    upload.copy(edges, host_view(g.edges.data(), g.edges.size()), g.edges.size());
    Queue queue(device);
    compile(upload, device).launch(queue).wait();
  }
  Search search() {
    return {offsets.data(), edges.data(), depth.data(), frontiers.data(), size.data(),
            next_size.data(), level.data(), static_cast<std::uint32_t>(depth.size())};
  }
};

// Records the start of a search into `cmd`: every depth unvisited, then level 0.
Command record_start(CommandBuffer& cmd, Memory& m, std::uint32_t source) {
  auto unvisited = cmd.fill(m.depth, -1, m.depth.size()).named("unvisited");
  return cmd.parallel_for(1, Start{m.search(), source}).after(unvisited).named("start");
}

struct Outcome {
  double ms = 0;
  int round_trips = 0;  // times the host read a size back before launching again
};

// The whole search as one launch of a loop_while over `level`, whose first command (`expand`)
// expands the current level and whose second advances to the next; timed after a warm-up.
Outcome search_in_one_launch(Device device, Queue& queue, Memory& m, std::uint32_t source,
                             CommandBuffer& level, Command expand) {
  level.parallel_for(1, Advance{m.search()}).after(expand).named("advance");
  CommandBuffer cmd("bfs");
  auto start = record_start(cmd, m, source);
  auto search = cmd.loop_while(level, FrontierLeft{m.size.data()}).after(start).named("levels");
  cmd.copy(m.depth_on_host, m.depth, m.depth.size()).after(search).named("download");
  Executable exe = compile(cmd, device);
  exe.launch(queue).wait();  // warm-up
  const sample::Stopwatch clock;
  exe.launch(queue).wait();
  const Outcome out{clock.ms(), 0};
  // No frontier holds more than every vertex, the limit given.
  if (!exe.clamped_dispatches().empty()) std::printf("  a frontier was clamped\n");
  return out;
}

// The frontier sizes each level's expansion on the device: no size returns to the host.
Outcome one_launch(Device device, Queue& queue, Memory& m, std::uint32_t source) {
  CommandBuffer level("level");
  auto expand = level.parallel_for_indirect(m.size, m.depth.size(), ExpandFrontier{m.search()})
                    .named("expand frontier");
  return search_in_one_launch(device, queue, m, source, level, expand);
}

// One launch per level: the host reads the frontier's size back and sizes the next launch.
Outcome host_driven(Device device, Queue& queue, Memory& m, std::uint32_t source) {
  CommandBuffer begin("bfs start");
  auto start = record_start(begin, m, source);
  begin.copy(m.size_on_host, m.size, 1).after(start);
  Executable first = compile(begin, device);
  CommandBuffer level("bfs level");
  auto expand = level.parallel_for(1, ExpandFrontier{m.search()}).named("expand frontier");
  auto advance = level.parallel_for(1, Advance{m.search()}).after(expand).named("advance");
  level.copy(m.size_on_host, m.size, 1).after(advance).named("size back");
  Executable next = compile(level, device);
  CommandBuffer end("bfs end");
  end.copy(m.depth_on_host, m.depth, m.depth.size());
  Executable last = compile(end, device);
  Outcome out;
  for (int run = 0; run < 2; ++run) {  // the first warms up
    const sample::Stopwatch clock;
    first.launch(queue).wait();
    out = {};
    while (m.size_on_host[0] > 0) {
      next.update(expand, std::size_t{m.size_on_host[0]}, ExpandFrontier{m.search()});
      next.launch(queue).wait();
      ++out.round_trips;
    }
    last.launch(queue).wait();
    out.ms = clock.ms();
  }
  return out;
}

// Every vertex checked at every level: the grid is the largest any level could need.
Outcome fixed_grid(Device device, Queue& queue, Memory& m, std::uint32_t source) {
  CommandBuffer level("level");
  auto expand = level.parallel_for(m.depth.size(), ExpandAll{m.search()}).named("expand all");
  return search_in_one_launch(device, queue, m, source, level, expand);
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

}  // namespace

int main(int argc, char** argv) {
  const auto vertices = static_cast<std::uint32_t>(sample::flag(argc, argv, "--vertices", 1 << 20));
  const auto degree = static_cast<std::uint32_t>(sample::flag(argc, argv, "--degree", 8));
  const Device device = Device::best();
  std::printf("frontier: breadth-first search over %u vertices of %u random neighbours, on %s\n",
              vertices, degree, device.name().c_str());
  const Graph graph = random_graph(vertices, degree);
  const std::vector<int> want = cpu_bfs(graph, 0);
  Memory memory(device, graph);
  Queue queue(device);

  struct Way {
    const char* name;
    Outcome (*run)(Device, Queue&, Memory&, std::uint32_t);
  };
  const Way ways[] = {{"one launch, indirect", one_launch},
                      {"host-driven, a launch per level", host_driven},
                      {"one launch, fixed grid", fixed_grid}};
  bool ok = true;
  for (const Way& way : ways) {
    for (std::size_t v = 0; v < vertices; ++v) memory.depth_on_host[v] = -7;  // poison
    const Outcome outcome = way.run(device, queue, memory, 0);
    int levels = 0;
    const bool right = same_depths(way.name, memory.depth_on_host, want, levels);
    ok = ok && right;
    std::printf("  %-32s %9.3f ms, %2d levels, %6.3f ms per level, %d host round trips\n",
                way.name, outcome.ms, levels, outcome.ms / levels, outcome.round_trips);
  }
  return sample::verdict("frontier", ok);
}
