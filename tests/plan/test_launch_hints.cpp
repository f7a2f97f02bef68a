// How commands ask to run beside what they do: programmatic edges (recorded, or into kernels
// declared programmatic-safe), priorities and costs (given, or taken from a profile), through
// recording, planning, updates and DOT.
#include "plan/compare.hpp"
#include "plan/new_values.hpp"
#include "plan/plan.hpp"
#include "plan/shaping.hpp"
#include "plan/structure_hash.hpp"
#include "record/recording.hpp"
#include "support/expect_error.hpp"
#include "support/ordering_oracle.hpp"
#include "support/random_dag.hpp"

#include <cmdgraph/cmdgraph.hpp>

#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <thread>

using namespace cmdgraph;
using namespace cmdgraph::testing;
using namespace std::chrono_literals;
using cmdgraph::testing::mentions;
using detail::Edge;
using detail::Plan;

namespace {

void kernel_stub(int) {}

struct Nothing {
  void operator()(std::size_t) const {}
};

std::shared_ptr<const Plan> plan_of(const CommandBuffer& cmd) {
  return detail::build_plan(*detail::recording_of(cmd));
}

std::set<std::pair<std::uint32_t, std::uint32_t>> programmatic(const Plan& plan) {
  std::set<std::pair<std::uint32_t, std::uint32_t>> s;
  for (const Edge& e : plan.dag->programmatic) s.emplace(e.parent, e.child);
  return s;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST_CASE("plan.dag->programmatic.edges_join_kernels_only" * doctest::timeout(10)) {
  CommandBuffer cmd("pdl");
  auto load = cmd.host([] {}).named("load");
  auto scale = cmd.parallel_for(8, Nothing{}).named("scale");
  auto e = CMDGRAPH_EXPECT_ERROR(scale.after(load, EdgeKind::programmatic), errc::invalid_argument);
  REQUIRE(e);
  CHECK(std::string(e->what()) ==
        "command buffer 'pdl': the programmatic edge 'load' -> 'scale' joins 'load', a host; "
        "programmatic edges join kernels (launch, parallel_for)");
  CHECK(e->commands() == std::vector<std::string>{"load", "scale"});
  // A refused call records nothing, of either kind.
  CHECK(detail::recording_of(cmd)->programmatic_edges().empty());
  CHECK(detail::recording_of(cmd)->edges().empty());
  // An indirect command's dispatcher reads its count before its kernel runs: no early launch.
  HostBuffer<std::uint32_t> count(1);
  auto sized = cmd.parallel_for_indirect(count, 8, Nothing{}).named("sized");
  e = CMDGRAPH_EXPECT_ERROR(sized.after(scale, EdgeKind::programmatic), errc::invalid_argument);
  REQUIRE(e);
  CHECK(std::string(e->what()) ==
        "command buffer 'pdl': the programmatic edge 'scale' -> 'sized' joins 'sized', an "
        "indirect; programmatic edges join kernels (launch, parallel_for)");
}

TEST_CASE("plan.dag->programmatic.kinds_survive_reduction" * doctest::timeout(10)) {
  CommandBuffer cmd("pdl");
  auto a = cmd.parallel_for(8, Nothing{});
  auto b = cmd.parallel_for(8, Nothing{}).after(a, EdgeKind::programmatic);
  auto c = cmd.parallel_for(8, Nothing{}).after(b, EdgeKind::programmatic);
  c.after(a);  // implied by a -> b -> c: reduced away
  auto d = cmd.parallel_for(8, Nothing{}).after(c, EdgeKind::programmatic);
  d.after(c);  // recorded both ways: full wins
  auto plan = plan_of(cmd);
  CHECK(plan->dag->edges.size() == 4);  // a-b, a-c, b-c, c-d once each
  CHECK(plan->dag->children.edges() == 3);
  CHECK(programmatic(*plan) == std::set<std::pair<std::uint32_t, std::uint32_t>>{
                                   {a.index(), b.index()}, {b.index(), c.index()}});
  CHECK(plan->is_programmatic(a.index(), b.index()));
  CHECK_FALSE(plan->is_programmatic(c.index(), d.index()));
  CHECK_FALSE(plan->is_programmatic(a.index(), c.index()));
}

TEST_CASE("plan.dag->programmatic.safe_kernels_take_edges_from_kernels" * doctest::timeout(10)) {
  CommandBuffer cmd("chain");
  auto k1 = cmd.launch(&kernel_stub, LaunchConfig{{1}, {1}}, 1);
  auto k2 = cmd.launch(&kernel_stub, LaunchConfig{{1}, {1}}, 2).after(k1).programmatic_safe();
  auto p = cmd.parallel_for(4, Nothing{}).after(k2);
  auto k3 = cmd.launch(&kernel_stub, LaunchConfig{{1}, {1}}, 3).programmatic_safe().after(p);
  auto h = cmd.host([] {});
  auto k4 = cmd.launch(&kernel_stub, LaunchConfig{{1}, {1}}, 4).programmatic_safe().after(h, k3);
  auto plan = plan_of(cmd);
  // Into a safe kernel from a kernel or parallel_for: programmatic; from a host task: full;
  // into a kernel not declared safe (p): full.
  CHECK(programmatic(*plan) == std::set<std::pair<std::uint32_t, std::uint32_t>>{
                                   {k1.index(), k2.index()},
                                   {p.index(), k3.index()},
                                   {k3.index(), k4.index()}});
  CHECK_FALSE(plan->is_programmatic(h.index(), k4.index()));
  CHECK_FALSE(plan->is_programmatic(k2.index(), p.index()));
}

TEST_CASE("plan.priority.recorded_and_refused" * doctest::timeout(10)) {
  CommandBuffer cmd("urgent");
  auto a = cmd.parallel_for(8, Nothing{}).named("a").priority(Priority::high);
  auto b = cmd.host([] {}).named("b").priority(-3);
  auto c = cmd.parallel_for(8, Nothing{}).named("c");
  auto e = CMDGRAPH_EXPECT_ERROR(c.priority(static_cast<Priority>(7)), errc::invalid_argument);
  REQUIRE(e);
  CHECK(std::string(e->what()) ==
        "command 'c' was given priority 7, which is not a Priority enumerator");
  CHECK(e->commands() == std::vector<std::string>{"c"});
  auto plan = plan_of(cmd);
  CHECK(plan->command(a.index()).hints.priority ==
        detail::PriorityRequest{false, static_cast<int>(Priority::high)});
  CHECK(plan->command(b.index()).hints.priority == detail::PriorityRequest{true, -3});
  CHECK_FALSE(plan->command(c.index()).hints.priority.has_value());  // the refusal changed nothing
  CHECK(detail::count_prioritised(*plan) == 2);
  Executable exe = compile(cmd, Device::host());
  CHECK(exe.stats().commands_prioritised == 0);  // the host backend has no priorities
  CHECK(exe.stats().edges_programmatic == 0);
}

TEST_CASE("plan.cost.recorded_and_refused" * doctest::timeout(10)) {
  CommandBuffer cmd("costly");
  auto a = cmd.parallel_for(8, Nothing{}).named("a").cost(2us);
  auto b = cmd.host([] {}).named("b").cost(0ns);
  auto c = cmd.parallel_for(8, Nothing{}).named("c");
  c.cost(5us);
  auto d = cmd.parallel_for(8, Nothing{}).named("d");
  auto e = CMDGRAPH_EXPECT_ERROR(c.cost(-5ns), errc::invalid_argument);
  REQUIRE(e);
  CHECK(std::string(e->what()) ==
        "command 'c' was given a cost of -5 ns; a cost is how long the command runs, at least 0");
  CHECK(e->commands() == std::vector<std::string>{"c"});
  auto plan = plan_of(cmd);
  CHECK(plan->command(a.index()).hints.cost == 2us);
  CHECK(plan->command(b.index()).hints.cost == 0ns);
  CHECK(plan->command(c.index()).hints.cost == 5us);  // the refusal changed nothing
  CHECK_FALSE(plan->command(d.index()).hints.cost.has_value());
  // A compiled buffer still takes costs, for its next compile.
  Executable exe = compile(cmd, Device::host());
  a.cost(3us);
  CHECK(plan_of(cmd)->command(a.index()).hints.cost == 3us);
  // Once it runs inside another, whose compile may read it on any thread, it takes none.
  CommandBuffer outer("outer");
  outer.execute(cmd);
  e = CMDGRAPH_EXPECT_ERROR(a.cost(1us), errc::wrong_state);
  REQUIRE(e);
  CHECK(std::string(e->what()) ==
        "command buffer 'costly' runs inside another (execute() or a conditional body), whose "
        "compile may read it on any thread: it cannot take a cost for command 'a' any more");
  CHECK(plan_of(cmd)->command(a.index()).hints.cost == 3us);
}

TEST_CASE("plan.cost.costs_from_a_host_profile" * doctest::timeout(30)) {
  CommandBuffer sub("sub");
  sub.host([] {}).named("inner");
  sub.host([] {});
  CommandBuffer cmd("timed");
  auto a = cmd.host([] { std::this_thread::sleep_for(2ms); }).named("a");
  auto b = cmd.parallel_for(64, Nothing{}).named("b").after(a);
  cmd.host([] {}).named("c").after(a);  // not a chain: shaping would look at the costs
  cmd.execute(sub).after(b);
  cmd.barrier();
  cmd.parallel_for(8, Nothing{}).named("d");
  Executable exe = compile(cmd, Device::host(), {.profile = true});
  Queue q(Device::host());
  exe.launch(q).wait();
  const Profile p = exe.last_profile();
  REQUIRE(p.commands.size() > cmd.size());  // the executed buffer's commands follow
  CHECK(detail::shape_graph(*plan_of(cmd), GraphShape::automatic()).reason.find(
            "have no cost") != std::string::npos);
  cmd.costs_from(p);  // compiled: still takes them
  auto plan = plan_of(cmd);
  for (std::uint32_t c = 0; c < cmd.size(); ++c) {
    CAPTURE(c);
    CHECK(plan->command(c).hints.cost ==
          std::chrono::nanoseconds(std::llround(p.commands[c].duration_ms() * 1e6)));
  }
  CHECK(plan->command(a.index()).hints.cost >= 2ms);
  CHECK(detail::shape_graph(*plan, GraphShape::automatic()).reason.find("have no cost") ==
        std::string::npos);
  // A fresh recording of the same commands takes them too.
  CommandBuffer again("timed");
  again.host([] {});
  again.parallel_for(64, Nothing{});
  again.host([] {});
  again.execute(sub);
  again.barrier();
  again.parallel_for(8, Nothing{});
  again.costs_from(p);
  CHECK(plan_of(again)->command(a.index()).hints.cost == plan->command(a.index()).hints.cost);
}

TEST_CASE("plan.cost.costs_from_refuses_a_profile_of_other_commands" * doctest::timeout(30)) {
  auto record = [](CommandBuffer& cmd, bool swapped, bool longer) {
    if (swapped) {
      cmd.parallel_for(8, Nothing{}).named("a");
      cmd.host([] {}).named("b");
    } else {
      cmd.host([] {}).named("a");
      cmd.parallel_for(8, Nothing{}).named("b");
    }
    if (longer) cmd.host([] {}).named("c");
  };
  CommandBuffer cmd("step");
  record(cmd, false, false);
  Executable exe = compile(cmd, Device::host(), {.profile = true});
  Queue q(Device::host());
  exe.launch(q).wait();
  const Profile p = exe.last_profile();

  CommandBuffer other("other"), longer("step"), swapped("step");
  record(other, false, false);
  record(longer, false, true);
  record(swapped, true, false);
  auto e = CMDGRAPH_EXPECT_ERROR(other.costs_from(p), errc::invalid_argument);
  REQUIRE(e);
  CHECK(std::string(e->what()) ==
        "command buffer 'other' cannot take costs from a profile of 'step': costs_from takes "
        "a profile of the same commands");
  e = CMDGRAPH_EXPECT_ERROR(longer.costs_from(p), errc::invalid_argument);
  REQUIRE(e);
  CHECK(std::string(e->what()) ==
        "command buffer 'step' has 3 commands, the profile of 'step' 2: costs_from takes a "
        "profile of the same commands");
  e = CMDGRAPH_EXPECT_ERROR(swapped.costs_from(p), errc::invalid_argument);
  REQUIRE(e);
  CHECK(std::string(e->what()) ==
        "command buffer 'step': command 'a' is a parallel_for, command 0 of the profile a "
        "host: costs_from takes a profile of the same commands");
  CHECK(e->commands() == std::vector<std::string>{"a"});
  for (CommandBuffer* refused : {&other, &longer, &swapped}) {
    const auto plan = plan_of(*refused);
    for (std::uint32_t c = 0; c < plan->size(); ++c) CHECK_FALSE(plan->command(c).hints.cost);
  }
  // A buffer run inside another takes none.
  CommandBuffer outer("outer");
  outer.execute(cmd);
  e = CMDGRAPH_EXPECT_ERROR(cmd.costs_from(p), errc::wrong_state);
  REQUIRE(e);
  CHECK(std::string(e->what()) ==
        "command buffer 'step' runs inside another (execute() or a conditional body), whose "
        "compile may read it on any thread: it cannot take costs from a profile any more");
}

TEST_CASE("plan.update_sees_priorities_and_edge_kinds_not_costs" * doctest::timeout(30)) {
  auto record = [](CommandBuffer& cmd, Priority priority, EdgeKind kind) {
    auto a = cmd.parallel_for(8, Nothing{}).named("a").priority(priority);
    cmd.parallel_for(8, Nothing{}).named("b").after(a, kind);
    return Command(a);
  };
  CommandBuffer cmd("step");
  record(cmd, Priority::high, EdgeKind::full);
  Executable exe = compile(cmd, Device::host());
  CommandBuffer same("step"), urgent("step"), early("step");
  record(same, Priority::high, EdgeKind::full);
  record(urgent, Priority::low, EdgeKind::full);
  record(early, Priority::high, EdgeKind::programmatic);
  CHECK_FALSE(exe.update(same).reinstantiated);
  // Costs are hints: another cost is no other structure (a shaped graph keeps its lanes).
  CommandBuffer costly("step");
  record(costly, Priority::high, EdgeKind::full).cost(5us);
  CHECK_FALSE(exe.update(costly).reinstantiated);
  auto e = CMDGRAPH_EXPECT_ERROR(exe.update(urgent), errc::update_refused);
  REQUIRE(e);
  CHECK(mentions(*e, "command 'a' has another priority"));
  e = CMDGRAPH_EXPECT_ERROR(exe.update(early), errc::update_refused);
  REQUIRE(e);
  CHECK(mentions(*e, "command 'a' has a programmatic edge to 'b', was full"));
}

TEST_CASE("plan.update_free.is_structure" * doctest::timeout(10)) {
  // Whether a kernel's node takes its arguments on the device decides what its node is: a
  // frame that turns it on or off is another structure, for updates and the cache alike.
  auto record = [](CommandBuffer& cmd, bool update_free, int value) {
    auto k = cmd.launch(&kernel_stub, LaunchConfig{{1}, {1}}, value).named("step");
    if (update_free) k.update_free();
    cmd.parallel_for(8, Nothing{}).named("after").after(k);
  };
  CommandBuffer plain("frame"), free_args("frame"), free_again("frame");
  record(plain, false, 1);
  record(free_args, true, 1);
  record(free_again, true, 2);
  const auto before = plan_of(free_args);
  CHECK(before->command(0).hints.update_free);
  CHECK_FALSE(before->command(1).hints.update_free);
  const auto& rec_plain = *detail::recording_of(plain);
  const auto& rec_free = *detail::recording_of(free_args);
  const auto& rec_again = *detail::recording_of(free_again);
  CHECK(detail::structure_hash(rec_plain) != detail::structure_hash(rec_free));
  CHECK(detail::structure_hash(rec_again) == detail::structure_hash(rec_free));
  // New values alone: the values path takes it; the flag turned off: the whole path, which
  // names the command.
  CHECK(detail::plan_of_new_values(*before, rec_again).plan);
  CHECK_FALSE(detail::plan_of_new_values(*before, rec_plain).plan);
  const detail::Difference d = detail::structural_difference(*before, *plan_of(plain));
  CHECK(d.what == "command 'step' is not update-free, was");
  CHECK(detail::structural_difference(*before, *plan_of(free_again)).what.empty());
  // Marked on a handle of a sealed or moved-from recording: refused as other hints are.
  auto k = KernelCommand<int>();
  CMDGRAPH_EXPECT_ERROR(k.update_free(), errc::invalid_handle);
  CommandBuffer sealed("sealed");
  auto s = sealed.launch(&kernel_stub, LaunchConfig{{1}, {1}}, 3);
  (void)plan_of(sealed);
  detail::recording_of(sealed)->seal();
  CMDGRAPH_EXPECT_ERROR(s.update_free(), errc::wrong_state);
}

TEST_CASE("plan.dag->programmatic.host_backend_orders_them_as_edges" * doctest::timeout(120)) {
  // Every edge programmatic, priorities at random: the host backend runs them as edges.
  for (std::uint32_t seed = 0; seed < 20; ++seed) {
    const Dag dag = random_dag(seed % 2 ? DagShape::random : DagShape::layered, 50 + 10 * seed, seed);
    CAPTURE(seed);
    constexpr std::uint32_t launches = 2;
    Observations obs(dag.size * launches);
    const TicketBoard board =
        obs.board(static_cast<std::uint32_t>(dag.size), static_cast<std::uint32_t>(dag.size), launches);
    CommandBuffer cmd("oracle");
    std::vector<Command> c;
    for (std::uint32_t v = 0; v < dag.size; ++v) {
      c.push_back(cmd.parallel_for(1, Ticket{board, v}).priority(static_cast<Priority>(v % 3)));
    }
    for (const auto& [p, k] : dag.edges) c[k].after(c[p], EdgeKind::programmatic);
    Executable exe = compile(cmd, Device::host());
    Queue queue(Device::host());
    for (std::uint32_t k = 0; k < launches; ++k) exe.launch(queue);
    queue.wait();
    const std::string verdict =
        check_order(dag, obs, launches, std::vector<std::uint32_t>(dag.size, 1));
    CHECK_MESSAGE(verdict.empty(), verdict);
  }
}

TEST_CASE("plan.dot.draws_edge_kinds_and_priorities" * doctest::timeout(10)) {
  CommandBuffer cmd("drawn");
  auto a = cmd.parallel_for(8, Nothing{}).named("a").priority(Priority::high);
  cmd.parallel_for(8, Nothing{}).named("b").after(a, EdgeKind::programmatic).priority(-2);
  Executable exe = compile(cmd, Device::host());
  const std::string path = "launch_hints_test.dot";
  exe.write_dot(path);
  const std::string dot = read_file(path);
  std::remove(path.c_str());
  // The critical path's colour comes first on that edge.
  CHECK(dot.find("c0 -> c1 [color=red, penwidth=2, arrowhead=onormal, xlabel=\"programmatic\"]") !=
        std::string::npos);
  CHECK(dot.find("priority high") != std::string::npos);
  CHECK(dot.find("priority -2") != std::string::npos);
}

TEST_CASE("plan.trace.names_programmatic_edges" * doctest::timeout(30)) {
  // Profiled on the host backend (a full edge there): the trace still says which edge the
  // recording made programmatic, and draws it within a lane too.
  CommandBuffer cmd("traced");
  auto a = cmd.parallel_for(8, Nothing{}).named("a");
  auto b = cmd.parallel_for(8, Nothing{}).named("b").after(a, EdgeKind::programmatic);
  cmd.parallel_for(8, Nothing{}).named("c").after(b);
  Executable exe = compile(cmd, Device::host(), {.profile = true});
  Queue q(Device::host());
  exe.launch(q).wait();
  const Profile p = exe.last_profile();
  CHECK(p.programmatic_edges ==
        std::vector<std::pair<std::size_t, std::size_t>>{{a.index(), b.index()}});
  const std::string trace = p.trace_json();
  std::size_t named = 0;
  for (std::size_t at = trace.find("\"name\":\"programmatic\""); at != std::string::npos;
       at = trace.find("\"name\":\"programmatic\"", at + 1)) {
    ++named;
  }
  CHECK(named == 2);  // its start and its finish
}
