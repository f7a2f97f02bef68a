// The streams backend's lane schedules against a careful hand on the benchmark's shapes: no
// more event waits on 2, 4 and 8 lanes.
#include "lane_schedules.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <queue>

using namespace cmdgraph;
using namespace cmdgraph::testing;

namespace {

// The flat plan's tasks (no executed buffers) in recording order where the edges allow: of
// the tasks whose parents are all placed, the one recorded first.
std::vector<std::uint32_t> recording_order(const detail::FlatPlan& flat) {
  const std::size_t n = flat.tasks.size();
  std::vector<std::size_t> left(n);
  using Entry = std::pair<std::uint32_t, std::uint32_t>;  // (command, task)
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> ready;
  for (std::uint32_t t = 0; t < n; ++t) {
    left[t] = flat.parents[t].size();
    if (left[t] == 0) ready.emplace(flat.tasks[t].command, t);
  }
  std::vector<std::uint32_t> order;
  while (!ready.empty()) {
    const std::uint32_t t = ready.top().second;
    ready.pop();
    order.push_back(t);
    for (std::uint32_t k : flat.children[t]) {
      if (--left[k] == 0) ready.emplace(flat.tasks[k].command, k);
    }
  }
  return order;
}

struct Hand {
  std::size_t waits = 0;
  std::uint64_t makespan = 0;  // in the lanes' model: one unit per task that takes time
};

// What a careful hand writes for a flat plan on `lanes` streams, in recording order: each
// task on its oldest parent's stream when that parent is the stream's last, else the next
// stream in turn; a wait on a parent's event unless the stream already waited on that stream
// at or after it; a fork for each stream it uses beyond the first and a join for each.
Hand careful_hand(const detail::FlatPlan& flat, unsigned lanes) {
  const std::size_t n = flat.tasks.size();
  std::vector<std::uint32_t> stream(n), tail(lanes, ~0u);
  std::vector<std::vector<std::int64_t>> waited(lanes, std::vector<std::int64_t>(lanes, -1));
  std::vector<std::int64_t> position(n), next(lanes, 0);
  std::vector<std::uint64_t> finish(n, 0), free_at(lanes, 0);
  std::vector<bool> used(lanes, false);
  Hand hand;
  std::size_t turn = 0;
  for (std::uint32_t v : recording_order(flat)) {
    std::vector<std::uint32_t> parents(flat.parents[v].begin(), flat.parents[v].end());
    std::sort(parents.begin(), parents.end(), [&](std::uint32_t a, std::uint32_t b) {
      return flat.tasks[a].command < flat.tasks[b].command;
    });
    const bool continues = !parents.empty() && tail[stream[parents[0]]] == parents[0];
    const std::uint32_t st = continues ? stream[parents[0]] : turn++ % lanes;
    if (!used[st] && st != 0) ++hand.waits;  // its fork
    used[st] = true;
    std::uint64_t ready = free_at[st];
    for (std::uint32_t p : parents) {
      ready = std::max(ready, finish[p]);
      if (stream[p] == st || waited[st][stream[p]] >= position[p]) continue;
      ++hand.waits;
      waited[st][stream[p]] = position[p];
    }
    stream[v] = st;
    tail[st] = v;
    position[v] = next[st]++;
    const detail::FlatTask& task = flat.tasks[v];
    finish[v] = free_at[st] = ready + detail::schedule_weight(task.plan->kind(task.command));
    hand.makespan = std::max(hand.makespan, finish[v]);
  }
  for (unsigned l = 1; l < lanes; ++l) hand.waits += used[l];  // joins
  return hand;
}

Dag chains(std::uint32_t count, std::uint32_t length) {
  Dag dag;
  dag.size = count * length;
  for (std::uint32_t c = 0; c < count; ++c)
    for (std::uint32_t i = 1; i < length; ++i)
      dag.edges.emplace_back(c * length + i - 1, c * length + i);
  return dag;
}

// `blocks` of 1 -> width -> 1, each block's source after the previous block's sink.
Dag fork_joins(std::uint32_t width, std::uint32_t blocks) {
  Dag dag;
  dag.size = blocks * (width + 2);
  for (std::uint32_t b = 0; b < blocks; ++b) {
    const std::uint32_t source = b * (width + 2), sink = source + width + 1;
    if (b) dag.edges.emplace_back(source - 1, source);
    for (std::uint32_t i = 1; i <= width; ++i) {
      dag.edges.emplace_back(source, source + i);
      dag.edges.emplace_back(source + i, sink);
    }
  }
  return dag;
}

// `count` layers of `width` tasks with a barrier between layers.
Scheduled layers(std::uint32_t count, std::uint32_t width, unsigned lanes) {
  CommandBuffer cmd("layers");
  for (std::uint32_t l = 0; l < count; ++l) {
    for (std::uint32_t i = 0; i < width; ++i) cmd.host([] {});
    if (l + 1 < count) cmd.barrier();
  }
  Scheduled s;
  s.plan = detail::build_plan(*detail::recording_of(cmd));
  s.flat = detail::flatten(*s.plan);
  s.schedule = detail::assign_lanes(s.flat, lanes);
  return s;
}

}  // namespace

TEST_CASE("lanes.no_more_waits_than_a_careful_hand" * doctest::timeout(120)) {
  // On each shape and stream count the schedule needs no more waits (forks and joins counted
  // for both) than the careful hand on the same plan, unless the hand saves them by taking
  // longer: on as many lanes as a layer has tasks its round robin drifts off the layers,
  // running two tasks of a layer one after the other, where the schedule's waits are the
  // fewest that run each layer on all the lanes it can use (each barrier waits on the other
  // lanes, which then wait on it, 49 times; the forks and joins make the 50th).
  for (const unsigned lanes : {2u, 4u, 8u}) {
    std::vector<std::pair<std::string, Scheduled>> shapes;
    shapes.emplace_back("chain 1000", schedule(chains(1, 1000), lanes));
    shapes.emplace_back("8 x 125 chains", schedule(chains(8, 125), lanes));
    shapes.emplace_back("fork-join 1 -> 64 -> 1 x 16", schedule(fork_joins(64, 16), lanes));
    shapes.emplace_back("50 layers of 4, barriers", layers(50, 4, lanes));
    shapes.emplace_back("50 layers of 8, barriers", layers(50, 8, lanes));
    shapes.emplace_back("layered 1000", schedule(random_dag(DagShape::layered, 1000, 3), lanes));
    shapes.emplace_back("shuffled 1000", schedule(random_dag(DagShape::shuffled, 1000, 3), lanes));
    for (const std::size_t n : {200u, 1000u, 4000u}) {
      for (const std::uint32_t seed : {7u, 8u, 9u}) {
        shapes.emplace_back("random " + std::to_string(n) + " seed " + std::to_string(seed),
                            schedule(random_earlier(n, seed), lanes));
      }
    }
    for (const auto& [name, s] : shapes) {
      const Hand hand = careful_hand(s.flat, lanes);
      CAPTURE(name);
      CAPTURE(lanes);
      MESSAGE(name << " on " << lanes << " lanes: " << s.schedule.wait_count() << " waits in "
                   << s.schedule.makespan << ", the hand " << hand.waits << " in "
                   << hand.makespan);
      CHECK((s.schedule.wait_count() <= hand.waits || s.schedule.makespan < hand.makespan));
      for (const std::uint32_t width : {4u, 8u}) {
        if (name != "50 layers of " + std::to_string(width) + ", barriers") continue;
        CHECK(s.schedule.wait_count() == 50 * 2 * (std::min(width, lanes) - 1));
      }
      const std::string problem = unimplied_edge(s);
      CHECK_MESSAGE(problem.empty(), problem);
    }
  }
}


TEST_CASE("lanes.host_bound_costs_keep_the_fewer_waits" * doctest::timeout(120)) {
  // With a cost on every task the model is in nanoseconds, and a launch takes the longer of the
  // device's run and the host's enqueue, one CUDA call per task, wait and record. Kernels of
  // ~2 us leave the host the slower (3.5 us a launch), so the waits decide, and the schedule
  // needs no more than the hand; kernels of ~50 us leave the device the slower, and the
  // critical path first is kept wherever recording order would take longer there.
  for (const unsigned lanes : {4u, 8u}) {
    for (const std::size_t n : {1000u, 4000u}) {
      for (const std::uint32_t seed : {7u, 8u}) {
        const Dag dag = random_earlier(n, seed);
        for (const auto each : {std::chrono::nanoseconds(2000), std::chrono::nanoseconds(50000)}) {
          const std::vector<std::chrono::nanoseconds> costs(dag.size, each);
          Scheduled s = recorded(dag, costs);
          s.schedule = detail::assign_lanes(s.flat, lanes);
          const detail::LaneSchedule by_start =
              detail::assign_lanes_in(detail::LaneOrder::by_start, s.flat, lanes);
          CAPTURE(n);
          CAPTURE(seed);
          CAPTURE(lanes);
          CAPTURE(each.count());
          REQUIRE(s.schedule.by_costs);
          CHECK(s.schedule.launch_time() <= by_start.launch_time());
          CHECK(s.schedule.host_enqueue > 0);
          if (each.count() == 2000) {
            CHECK(s.schedule.host_enqueue > s.schedule.makespan);  // host-bound
            CHECK(s.schedule.wait_count() <= careful_hand(s.flat, lanes).waits);
          } else {
            CHECK(s.schedule.makespan > s.schedule.host_enqueue);  // device-bound
            CHECK(s.schedule.makespan <= by_start.makespan);
          }
        }
      }
    }
  }
}
