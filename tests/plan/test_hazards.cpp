// Declared access (issue 14): a brute-force oracle over random programs (every conflicting
// pair computed directly, the closure of the edges by search) against validate and infer;
// the ticket oracle with inferred edges only; record-time refusals; messages word for word.
#include "plan/hazards.hpp"
#include "plan/plan.hpp"
#include "support/expect_error.hpp"

#include <cmdgraph/cmdgraph.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <random>
#include <set>
#include <thread>
#include <vector>

using namespace cmdgraph;
using cmdgraph::testing::mentions;
using detail::Plan;

namespace {

// One access of a random program: elements [begin, end) of buffer `buffer`.
struct Touch {
  int buffer;
  std::size_t begin, end;
  detail::AccessMode mode;
};

struct Program {
  std::vector<std::vector<Touch>> touches;          // per command
  std::vector<std::pair<std::uint32_t, std::uint32_t>> edges;  // explicit, forward
};

constexpr std::size_t elements = 16;

Program random_program(std::mt19937& rng) {
  Program p;
  const std::size_t n = 2 + rng() % 13;
  p.touches.resize(n);
  for (auto& t : p.touches) {
    for (std::size_t k = rng() % 4; k > 0; --k) {
      const std::size_t a = rng() % elements, b = rng() % elements;
      const auto mode = static_cast<detail::AccessMode>(1 + rng() % 3);
      t.push_back({static_cast<int>(rng() % 3), std::min(a, b), std::max(a, b) + 1, mode});
    }
  }
  const unsigned density = rng() % 60;
  for (std::uint32_t i = 0; i < n; ++i) {
    for (std::uint32_t j = i + 1; j < n; ++j) {
      if (rng() % 100 < density) p.edges.emplace_back(i, j);
    }
  }
  return p;
}

bool writes(detail::AccessMode m) { return (static_cast<unsigned>(m) & 2u) != 0; }

bool conflict(const std::vector<Touch>& a, const std::vector<Touch>& b) {
  for (const Touch& x : a) {
    for (const Touch& y : b) {
      if (x.buffer == y.buffer && x.begin < y.end && y.begin < x.end &&
          (writes(x.mode) || writes(y.mode))) {
        return true;
      }
    }
  }
  return false;
}

// reach[i][j]: a path of `edges` leads from i to j.
std::vector<std::vector<bool>> closure(std::size_t n,
                                       const std::vector<std::pair<std::uint32_t, std::uint32_t>>& edges) {
  std::vector<std::vector<std::uint32_t>> out(n);
  for (const auto& [a, b] : edges) out[a].push_back(b);
  std::vector<std::vector<bool>> reach(n, std::vector<bool>(n, false));
  for (std::uint32_t s = 0; s < n; ++s) {
    std::vector<std::uint32_t> stack{s};
    while (!stack.empty()) {
      const std::uint32_t v = stack.back();
      stack.pop_back();
      for (std::uint32_t k : out[v]) {
        if (!reach[s][k]) {
          reach[s][k] = true;
          stack.push_back(k);
        }
      }
    }
  }
  return reach;
}

using Pairs = std::set<std::pair<std::uint32_t, std::uint32_t>>;

// Conflicting pairs (i < j) no path orders, either way.
Pairs unordered_conflicts(const Program& p,
                          const std::vector<std::pair<std::uint32_t, std::uint32_t>>& edges) {
  const auto reach = closure(p.touches.size(), edges);
  Pairs out;
  for (std::uint32_t i = 0; i < p.touches.size(); ++i) {
    for (std::uint32_t j = i + 1; j < p.touches.size(); ++j) {
      if (conflict(p.touches[i], p.touches[j]) && !reach[i][j] && !reach[j][i]) out.emplace(i, j);
    }
  }
  return out;
}

struct Memory {
  std::vector<Buffer<int>> buffers;
  Memory() {
    for (int b = 0; b < 3; ++b) buffers.emplace_back(Device::host(), elements);
  }
};

void record(CommandBuffer& cmd, const Program& p, const Memory& m,
            std::vector<std::atomic<int>>* tickets = nullptr, std::atomic<int>* counter = nullptr) {
  std::vector<Command> c;
  for (std::size_t i = 0; i < p.touches.size(); ++i) {
    Command h = cmd.host([tickets, counter, i] {
      if (tickets) (*tickets)[i] = (*counter)++;
    });
    for (const Touch& t : p.touches[i]) {
      const View<int> v = m.buffers[static_cast<std::size_t>(t.buffer)].subview(t.begin, t.end - t.begin);
      switch (t.mode) {
        case detail::AccessMode::read: h.reads(v); break;
        case detail::AccessMode::write: h.writes(v); break;
        case detail::AccessMode::read_write: h.reads_writes(v); break;
      }
    }
    c.push_back(h);
  }
  for (const auto& [a, b] : p.edges) c[b].after(c[a]);
}

// The lint on a plan validate passed: an edge is unneeded exactly when it lies on no path
// between the two commands of an immediate conflict (brute force over the closure), and
// dropping every unneeded edge leaves every conflicting pair ordered.
void check_unneeded(const Program& p, const Plan& plan, const std::vector<std::vector<bool>>& reach) {
  const auto conflicts = detail::immediate_conflicts(detail::AccessLists(plan), detail::validation_order(plan));
  const auto reaches = [&](std::uint32_t a, std::uint32_t b) { return a == b || reach[a][b]; };
  std::set<std::pair<std::uint32_t, std::uint32_t>> unneeded;
  for (const detail::Edge& e : detail::unneeded_edges(plan)) unneeded.emplace(e.parent, e.child);
  for (std::uint32_t v = 0; v < plan.size(); ++v) {
    for (std::uint32_t k : plan.dag->children[v]) {
      if (p.touches[v].empty() || p.touches[k].empty()) {
        CHECK(unneeded.count({v, k}) == 0);  // not judged
        continue;
      }
      const bool on_a_path = std::any_of(conflicts.begin(), conflicts.end(), [&](const auto& c) {
        return reaches(c.first, v) && reaches(k, c.second);
      });
      CHECK(on_a_path != (unneeded.count({v, k}) == 1));
    }
  }
  auto kept = p.edges;
  std::erase_if(kept, [&](const auto& e) { return unneeded.count(e) == 1; });
  CHECK(unordered_conflicts(p, kept).empty());
}

std::shared_ptr<const Plan> plan_of(const CommandBuffer& cmd, Hazards hazards) {
  return detail::build_plan(*detail::recording_of(cmd), hazards);
}

// Validate against the oracle on a recorded program: the pairs the sweep lists are
// conflicting pairs no path orders, an edge for each fixes every one, compile() refuses
// exactly when there is one, naming the commands of the listed pairs, and otherwise marks
// unneeded exactly the edges on no path between a conflicting pair. True when refused.
bool validate_against_the_oracle(const Program& p, const CommandBuffer& cmd) {
  const Pairs expected = unordered_conflicts(p, p.edges);
  // What validate reports, from the analysis itself on the unchecked plan.
  const auto plan = plan_of(cmd, Hazards::off);
  Pairs reported;
  const auto reach = closure(p.touches.size(), p.edges);
  const auto sweep = detail::validation_order(*plan);
  for (const detail::Conflict& k : detail::immediate_conflicts(detail::AccessLists(*plan), sweep)) {
    if (!reach[k.first][k.second]) reported.emplace(k.first, k.second);  // in sweep order
  }
  for (const auto& [a, b] : reported) CHECK(expected.count({std::min(a, b), std::max(a, b)}) == 1);
  CHECK(reported.empty() == expected.empty());                       // none is missed
  // An edge for each reported pair, as reported, orders every conflicting pair.
  auto fixed = p.edges;
  fixed.insert(fixed.end(), reported.begin(), reported.end());
  CHECK(unordered_conflicts(p, fixed).empty());
  try {
    const auto checked = plan_of(cmd, Hazards::validate);
    CHECK(expected.empty());
    check_unneeded(p, *checked, reach);
    return false;
  } catch (const Error& e) {
    REQUIRE(e.code() == errc::hazard);
    CHECK_FALSE(expected.empty());
    std::set<std::string> named(e.commands().begin(), e.commands().end());
    std::set<std::string> involved;
    for (const auto& [a, b] : reported) {
      involved.insert(plan->name(a));
      involved.insert(plan->name(b));
    }
    CHECK(named == involved);
    return true;
  }
}

}  // namespace

TEST_CASE("hazards.validate_agrees_with_the_oracle" * doctest::timeout(120)) {
  std::mt19937 rng(14);
  const Memory memory;
  int refused = 0;
  for (int round = 0; round < 600; ++round) {
    const Program p = random_program(rng);
    CommandBuffer cmd("random");
    record(cmd, p, memory);
    refused += validate_against_the_oracle(p, cmd) ? 1 : 0;
  }
  MESSAGE(refused << " of 600 random programs had hazards");
  CHECK(refused > 100);
  CHECK(refused < 550);
}

TEST_CASE("hazards.infer_orders_every_conflict" * doctest::timeout(120)) {
  std::mt19937 rng(15);
  const Memory memory;
  for (int round = 0; round < 600; ++round) {
    const Program p = random_program(rng);
    CommandBuffer cmd("random");
    record(cmd, p, memory);
    const auto plan = plan_of(cmd, Hazards::infer);
    std::vector<std::pair<std::uint32_t, std::uint32_t>> all;
    for (const detail::Edge& e : plan->dag->edges) all.emplace_back(e.parent, e.child);
    CHECK(unordered_conflicts(p, all).empty());
    for (const detail::InferredEdge& e : plan->hazards.inferred) {
      CHECK(e.edge.parent < e.edge.child);  // recording order
      CHECK(conflict(p.touches[e.edge.parent], p.touches[e.edge.child]));
    }
  }
}

// Programs of 1,500 commands over two buffers of 64 elements: clusters of thousands of
// accesses (the sweep's map of segments), over 512 sources (several reachability passes),
// sources far apart (passes of their own). Edges: each command after the last toucher of
// every buffer it touches (valid), in odd rounds with some of them dropped.
TEST_CASE("hazards.large_programs_agree_with_the_oracle" * doctest::timeout(240)) {
  constexpr std::size_t n = 1500, size = 64;
  std::mt19937 rng(17);
  std::vector<Buffer<int>> buffers;
  for (int b = 0; b < 2; ++b) buffers.emplace_back(Device::host(), size);
  int refused = 0;
  for (int round = 0; round < 6; ++round) {
    CAPTURE(round);
    Program p;
    p.touches.resize(n);
    std::vector<std::int64_t> last(2, -1);
    for (std::uint32_t c = 0; c < n; ++c) {
      for (std::size_t k = 1 + rng() % 2; k > 0; --k) {
        const std::size_t a = rng() % size, len = 1 + rng() % (round < 3 ? 4 : 32);
        const int b = static_cast<int>(rng() % 2);
        const auto mode = static_cast<detail::AccessMode>(rng() % 6 == 0 ? 2 : 1 + rng() % 3 / 2);
        p.touches[c].push_back({b, a, std::min(size, a + len), mode});
        if (last[b] >= 0 && last[b] != c && (round % 2 == 0 || rng() % 400 != 0)) {
          p.edges.emplace_back(static_cast<std::uint32_t>(last[b]), c);
        }
        last[b] = c;
      }
    }
    std::vector<Command> commands;
    CommandBuffer cmd("large");
    for (std::uint32_t c = 0; c < n; ++c) {
      Command h = cmd.host([] {});
      for (const Touch& t : p.touches[c]) {
        const View<int> v = buffers[static_cast<std::size_t>(t.buffer)].subview(t.begin, t.end - t.begin);
        writes(t.mode) ? (t.mode == detail::AccessMode::write ? h.writes(v) : h.reads_writes(v))
                       : h.reads(v);
      }
      commands.push_back(h);
    }
    for (const auto& [a, b] : p.edges) commands[b].after(commands[a]);
    if (round % 2 == 0) CHECK(unordered_conflicts(p, p.edges).empty());
    refused += validate_against_the_oracle(p, cmd) ? 1 : 0;
    const auto inferred = plan_of(cmd, Hazards::infer);
    std::vector<std::pair<std::uint32_t, std::uint32_t>> kept;
    for (std::uint32_t v = 0; v < n; ++v) {
      for (std::uint32_t k : inferred->dag->children[v]) kept.emplace_back(v, k);
    }
    CHECK(unordered_conflicts(p, kept).empty());  // the reduced edges still order them all
  }
  CHECK(refused >= 1);
}

TEST_CASE("hazards.inferred_edges_order_every_backend_run" * doctest::timeout(120)) {
  // The ticket oracle: no explicit edge at all, only declarations; every conflicting pair
  // must run in recording order.
  std::mt19937 rng(16);
  const Memory memory;
  Queue q(Device::host());
  for (int round = 0; round < 60; ++round) {
    Program p = random_program(rng);
    p.edges.clear();
    std::vector<std::atomic<int>> tickets(p.touches.size());
    std::atomic<int> counter{0};
    CommandBuffer cmd("tickets");
    record(cmd, p, memory, &tickets, &counter);
    Executable exe = compile(cmd, Device::host(), {.hazards = Hazards::infer});
    for (int launch = 0; launch < 3; ++launch) {
      for (auto& t : tickets) t = -1;
      counter = 0;
      exe.launch(q).wait();
      for (std::uint32_t i = 0; i < p.touches.size(); ++i) {
        for (std::uint32_t j = i + 1; j < p.touches.size(); ++j) {
          if (conflict(p.touches[i], p.touches[j])) CHECK(tickets[i] < tickets[j]);
        }
      }
    }
  }
}

TEST_CASE("hazards.message_word_for_word" * doctest::timeout(30)) {
  Buffer<float> y(Device::host(), 4096);
  CommandBuffer cmd("example");
  cmd.host([] {}).named("scale").writes(y, "y");
  cmd.host([] {}).named("reduce").reads(y.subview(1024, 1024), "y");
  const auto e = CMDGRAPH_EXPECT_ERROR(compile(cmd, Device::host()), errc::hazard);
  REQUIRE(e);
  CHECK(std::string(e->what()) ==
        "command buffer 'example' has 1 hazard (commands touching the same memory, one "
        "writing, unordered):\n  command 'scale' writes y[0, 4096) while 'reduce' reads "
        "y[1024, 2048) with no path between them (read-after-write)");
  CHECK(e->commands() == std::vector<std::string>{"scale", "reduce"});
  CHECK_FALSE(cmd.sealed());  // a refused compile keeps the buffer open
}

// A recording keeps its declarations in the order made; the plan gives each its command.
TEST_CASE("hazards.declarations_made_out_of_order_belong_to_their_command" * doctest::timeout(30)) {
  Buffer<float> x(Device::host(), 64);
  CommandBuffer cmd("late");
  Command first = cmd.host([] {}).named("first");
  cmd.host([] {}).named("second").reads(x, "x");
  first.writes(x.subview(0, 16));  // after a later command's, and unlabelled: shares "x"
  const auto e = CMDGRAPH_EXPECT_ERROR(compile(cmd, Device::host()), errc::hazard);
  REQUIRE(e);
  CHECK(std::string(e->what()) ==
        "command buffer 'late' has 1 hazard (commands touching the same memory, one "
        "writing, unordered):\n  command 'first' writes x[0, 16) while 'second' reads "
        "x[0, 64) with no path between them (read-after-write)");
}

// Labels live in the recording; an executable outlives its command buffer and still names them.
TEST_CASE("hazards.labels_outlive_the_command_buffer" * doctest::timeout(30)) {
  Buffer<int> x(Device::host(), 8);
  std::optional<Executable> exe;
  {
    CommandBuffer cmd("gone");
    cmd.host([] {}).writes(x, std::string(40, 'x').c_str());  // longer than any inline string
    cmd.host([] {}).reads(x);
    exe = compile(cmd, Device::host(), {.hazards = Hazards::infer});
  }
  const auto path = std::filesystem::temp_directory_path() / "cmdgraph_labels.dot";
  exe->write_dot(path.string());
  std::ifstream in(path);
  const std::string dot((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::filesystem::remove(path);
  CHECK(dot.find("label=\"" + std::string(40, 'x') + "\"") != std::string::npos);
}

TEST_CASE("hazards.disjoint_slices_never_conflict" * doctest::timeout(30)) {
  Buffer<int> y(Device::host(), 1024);
  CommandBuffer cmd("chunks");
  for (std::size_t k = 0; k < 4; ++k) {
    cmd.host([] {}).writes(y.subview(k * 256, 256));
    cmd.host([] {}).reads(y.subview(k * 256, 256)).writes(y.subview(k * 256, 256));
  }
  Executable exe = compile(cmd, Device::host(), {.hazards = Hazards::infer});
  CHECK(exe.stats().edges_inferred == 4);  // each chunk's two steps, nothing across chunks
  CHECK(exe.stats().levels == 2);
}

TEST_CASE("hazards.automatic_checks_wherever_memory_is_touched" * doctest::timeout(30)) {
  Buffer<int> a(Device::host(), 8), b(Device::host(), 8);
  SUBCASE("nothing touches memory the plan sees: nothing is checked") {
    CommandBuffer cmd("plain");
    cmd.host([] {});
    cmd.host([] {});
    Executable exe = compile(cmd, Device::host());
    CHECK(exe.stats().accesses_declared == 0);
  }
  SUBCASE("no declaration: copies and fills are checked all the same") {
    CommandBuffer cmd("plain");
    cmd.fill(a, 1, 8);
    cmd.copy(b, a, 8);
    const auto e = CMDGRAPH_EXPECT_ERROR(compile(cmd, Device::host()), errc::hazard);
    REQUIRE(e);
    CHECK(mentions(*e, "command 'fill#0' writes"));
  }
  SUBCASE("one declaration: copies and fills are checked with it") {
    CommandBuffer cmd("declared");
    cmd.fill(a, 1, 8).named("fill a");
    cmd.copy(b, a, 8).named("a to b");
    cmd.host([] {}).named("reader").reads(b);
    const auto e = CMDGRAPH_EXPECT_ERROR(compile(cmd, Device::host()), errc::hazard);
    REQUIRE(e);
    CHECK(mentions(*e, "2 hazards"));
    CHECK(mentions(*e, "command 'fill a' writes"));
    CHECK(mentions(*e, "'a to b' reads"));
    CHECK(mentions(*e, "command 'a to b' writes"));
    CHECK(mentions(*e, "'reader' reads"));
  }
}

TEST_CASE("hazards.executed_buffers_carry_their_access" * doctest::timeout(30)) {
  Buffer<int> y(Device::host(), 8);
  CommandBuffer inner("inner");
  inner.host([] {}).named("produce").writes(y, "y");
  CommandBuffer outer("outer");
  outer.execute(inner).named("run inner");
  outer.host([] {}).named("consume").reads(y, "y");
  const auto e = CMDGRAPH_EXPECT_ERROR(compile(outer, Device::host()), errc::hazard);
  REQUIRE(e);
  CHECK(e->commands() == std::vector<std::string>{"run inner", "consume"});
  CommandBuffer fixed("outer");
  const Command run = fixed.execute(inner);
  fixed.host([] {}).reads(y, "y").after(run);
  Executable exe = compile(fixed, Device::host());
  CHECK(exe.stats().accesses_declared == 2);
  CHECK(exe.stats().pairs_validated == 1);
}

TEST_CASE("hazards.declarations_are_checked_when_recorded" * doctest::timeout(30)) {
  Buffer<int> y(Device::host(), 8);
  CommandBuffer cmd("refusals");
  auto copy = cmd.copy(y.subview(0, 4), y.subview(4, 4), 4).named("half");
  auto e = CMDGRAPH_EXPECT_ERROR(copy.reads(y), errc::invalid_argument);
  REQUIRE(e);
  CHECK(mentions(*e, "'half' is a copy"));
  auto task = cmd.host([] {}).named("task");
  e = CMDGRAPH_EXPECT_ERROR(task.writes(host_view<int>(nullptr, 4)), errc::invalid_argument);
  REQUIRE(e);
  CHECK(mentions(*e, "'task' declares that it writes a null view"));
  CMDGRAPH_EXPECT_ERROR(task.reads(y.subview(2, 0)), errc::invalid_argument);
  CHECK(compile(cmd, Device::host()).stats().accesses_declared == 0);  // nothing was kept
}

// The lint is counted when stats() is first read; a clone taken meanwhile on another thread
// copies the stats without racing with that count (TSan's setup runs this), and counts its own.
TEST_CASE("hazards.lint_counted_while_another_thread_clones" * doctest::timeout(60)) {
  std::vector<Buffer<int>> buffers;
  for (int b = 0; b < 50; ++b) buffers.emplace_back(Device::host(), 64);
  CommandBuffer cmd("cloned");
  std::vector<Command> last(buffers.size());
  for (int c = 0; c < 3000; ++c) {
    const std::size_t b = static_cast<std::size_t>(c * 7 % 50);
    Command h = cmd.host([] {});
    c % 3 == 0 ? h.writes(buffers[b].subview(c % 60, 4)) : h.reads(buffers[b].subview(c % 60, 4));
    if (last[b].valid()) h.after(last[b]);  // a chain per buffer: reads after reads order nothing
    last[b] = h;
  }
  const std::size_t expected = compile(cmd, Device::host()).stats().edges_unneeded;
  REQUIRE(expected > 0);
  for (int round = 0; round < 4; ++round) {
    Executable exe = compile(cmd, Device::host());
    std::atomic<bool> go{false};
    std::optional<Executable> copy;
    std::thread cloner([&] {
      while (!go.load()) {
      }
      copy.emplace(exe.clone());
    });
    go.store(true);
    CHECK(exe.stats().edges_unneeded == expected);
    cloner.join();
    CHECK(copy->stats().edges_unneeded == expected);
  }
}

TEST_CASE("hazards.dot_draws_inferred_edges_dashed_with_their_memory" * doctest::timeout(30)) {
  Buffer<int> x(Device::host(), 8), y(Device::host(), 8);
  CommandBuffer cmd("drawn");
  const Command produce = cmd.host([] {}).named("produce").writes(x, "x");
  cmd.host([] {}).named("consume").reads(x, "x").writes(y, "y");
  cmd.host([] {}).named("after").after(produce);  // recorded: drawn plain
  Executable exe = compile(cmd, Device::host(), {.hazards = Hazards::infer});
  const auto path = std::filesystem::temp_directory_path() / "cmdgraph_hazards.dot";
  exe.write_dot(path.string());
  std::ifstream in(path);
  const std::string dot((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::filesystem::remove(path);
  const auto line_of = [&](const std::string& edge) {
    const auto at = dot.find(edge);
    return at == std::string::npos ? std::string() : dot.substr(at, dot.find('\n', at) - at);
  };
  CHECK(line_of("c0 -> c1").find("style=dashed, label=\"x\"") != std::string::npos);
  REQUIRE_FALSE(line_of("c0 -> c2").empty());
  CHECK(line_of("c0 -> c2").find("dashed") == std::string::npos);
}

TEST_CASE("hazards.inferred_edges_against_recorded_ones_name_the_cycle" * doctest::timeout(30)) {
  Buffer<int> x(Device::host(), 8);
  CommandBuffer cmd("contrary");
  Command first = cmd.host([] {}).named("first").writes(x, "x");
  first.after(cmd.host([] {}).named("second").reads(x, "x"));
  const auto e = CMDGRAPH_EXPECT_ERROR(compile(cmd, Device::host(), {.hazards = Hazards::infer}),
                                       errc::cycle);
  REQUIRE(e);
  CHECK(std::string(e->what()) ==
        "command buffer 'contrary' has a cycle: 'first' -[x]-> 'second' -> 'first' (-[memory]-> "
        "is an edge inferred from access to that memory)");
}

TEST_CASE("hazards.validate_counts_edges_that_order_nothing" * doctest::timeout(30)) {
  Buffer<int> x(Device::host(), 8), y(Device::host(), 8);
  CommandBuffer cmd("lint");
  const Command a = cmd.host([] {}).writes(x);
  const Command b = cmd.host([] {}).reads(x).after(a);  // orders a read after a write
  const Command c = cmd.host([] {}).writes(y).after(b);  // y is nobody else's: unneeded
  cmd.host([] {}).after(c);                              // touches nothing: not judged
  Executable exe = compile(cmd, Device::host());
  CHECK(exe.stats().pairs_validated == 1);
  CHECK(exe.stats().edges_unneeded == 1);
  CHECK(exe.stats().edges_reduced == 3);
}

TEST_CASE("hazards.loop_bodies_and_conditions_carry_their_access" * doctest::timeout(30)) {
  Buffer<int> counter(Device::host(), 1), out(Device::host(), 1);
  int* c = counter.data();
  CommandBuffer body("body");
  body.parallel_for(1, [c](std::size_t) { ++*c; }).named("increment").reads_writes(counter, "n");
  CommandBuffer cmd("looping");
  const Command reset = cmd.fill(counter, 0, 1).named("reset");
  Command loop = cmd.loop_while(body, [c] { return *c < 5; }).named("count").reads(counter, "n");
  cmd.copy(out, counter, 1).named("copy n");  // forgot .after(loop)
  loop.after(reset);
  const auto e = CMDGRAPH_EXPECT_ERROR(compile(cmd, Device::host()), errc::hazard);
  REQUIRE(e);
  CHECK(e->commands() == std::vector<std::string>{"count", "copy n"});
  CHECK(mentions(*e, "command 'count' reads and writes n[0, 1) while 'copy n' reads n[0, 1)"));

  Executable exe = compile(cmd, Device::host(), {.hazards = Hazards::infer});
  CHECK(exe.stats().edges_inferred == 1);  // count -> copy n; reset -> count was recorded
  Queue q(Device::host());
  out.data()[0] = -1;
  exe.launch(q).wait();
  CHECK(out.data()[0] == 5);
}

TEST_CASE("hazards.every_branch_and_case_carries_its_access" * doctest::timeout(30)) {
  // Only the else branch and the third case touch y: each is enough to order the command that
  // runs them against a reader of y, whichever branch or case runs.
  Buffer<int> y(Device::host(), 4), out(Device::host(), 4);
  int* p = y.data();
  CommandBuffer then_body("then"), else_body("else");  // the then branch and two cases do nothing
  else_body.fill(y, 3, 4).named("fill y");
  CommandBuffer a("a"), b("b"), c("c");
  c.parallel_for(4, [p](std::size_t i) { p[i] += 1; }).named("bump y").reads_writes(y, "y");
  CommandBuffer cmd("branching");
  cmd.if_else([] { return false; }, then_body, else_body).named("choose");
  cmd.switch_on([] { return 2; }, {a, b, c}).named("pick");
  cmd.copy(out, y, 4).named("copy y");
  const auto e = CMDGRAPH_EXPECT_ERROR(compile(cmd, Device::host()), errc::hazard);
  REQUIRE(e);
  CHECK(mentions(*e, "command 'choose' writes y[0, 4) while 'pick' reads and writes y[0, 4)"));
  CHECK(mentions(*e, "'copy y'"));

  Executable exe = compile(cmd, Device::host(), {.hazards = Hazards::infer});
  CHECK(exe.stats().edges_inferred == 2);  // choose -> pick -> copy y
  Queue q(Device::host());
  std::fill(out.data(), out.data() + 4, -1);
  exe.launch(q).wait();
  CHECK(out.data()[3] == 4);
}

TEST_CASE("hazards.off_keeps_declarations_unchecked" * doctest::timeout(30)) {
  Buffer<int> y(Device::host(), 8);
  CommandBuffer cmd("unchecked");
  cmd.host([] {}).writes(y);
  cmd.host([] {}).reads(y);
  Executable exe = compile(cmd, Device::host(), {.hazards = Hazards::off});
  CHECK(exe.stats().accesses_declared == 2);
  CHECK(exe.stats().pairs_validated == 0);
  CHECK(exe.stats().edges_inferred == 0);
  CHECK(exe.stats().edges_reduced == 0);
}

TEST_CASE("hazards.updates_that_would_add_a_hazard_are_refused" * doctest::timeout(30)) {
  Buffer<int> a(Device::host(), 8), b(Device::host(), 8), c(Device::host(), 8);
  for (const Hazards mode : {Hazards::validate, Hazards::infer}) {
    CAPTURE(static_cast<int>(mode));
    CommandBuffer cmd("updated");
    auto fill = cmd.fill(a, 7, 8).named("fill a");
    auto copy = cmd.copy(b, a, 8).named("a to b");
    if (mode == Hazards::validate) copy.after(fill);
    cmd.host([] {}).named("reads c").reads(c, "c");
    Executable exe = compile(cmd, Device::host(), {.hazards = mode});
    exe.update(copy, b, a, 4);  // the same memory: fine
    if (mode == Hazards::validate) {
      const auto e = CMDGRAPH_EXPECT_ERROR(exe.update(copy, c, a, 8), errc::hazard);
      REQUIRE(e);
      CHECK(mentions(*e, "update of command 'a to b' would leave 1 hazard"));
      CHECK(mentions(*e, "command 'a to b' writes c[0, 8) while 'reads c' reads c[0, 8)"));
    } else {
      const auto e = CMDGRAPH_EXPECT_ERROR(exe.update(fill, c, 1, 8), errc::update_refused);
      REQUIRE(e);
      CHECK(e->commands() == std::vector<std::string>{"fill a", "reads c"});
    }
    // Refused updates change nothing: the copy still moves a's sevens to b (4 of them).
    Queue q(Device::host());
    std::fill(b.data(), b.data() + 8, 0);
    exe.launch(q).wait();
    CHECK(b.data()[3] == 7);
    CHECK(b.data()[4] == 0);
  }
}
