// Jacobi iteration to convergence, two ways: re-launching one executable (a batch of sweeps
// and the residual per launch) with the host checking the residual every few launches; and
// one launch of a loop_while whose condition reads the residual on the device, so the passes
// never return to the host (a conditional WHILE node on a CUDA graph). [--size N]
#include "sample.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numbers>
#include <vector>

using namespace cmdgraph;

namespace {

constexpr int sweeps_per_pass = 16;  // even: every pass ends with the solution back in u
constexpr int check_every = 8;       // launches between two residual checks on the host
constexpr double tolerance = 1e-10;

// The discrete Poisson problem -laplace(u) = f on the unit square, u = 0 on the boundary,
// stored with its boundary as (n + 2) x (n + 2) values; `rhs` holds h^2 f.
struct Grid {
  std::size_t n;
  std::size_t width() const { return n + 2; }
  std::size_t size() const { return width() * width(); }
  std::size_t max_sweeps() const { return 40 * n * n; }  // far beyond convergence
};

// One Jacobi sweep: every interior point becomes the mean of its neighbours plus h^2 f / 4.
struct JacobiSweep {
  const double* from;
  double* to;
  const double* rhs;
  std::size_t n;
  CMDGRAPH_HOST_DEVICE void operator()(std::size_t i) const {
    const std::size_t w = n + 2, at = (i / n + 1) * w + i % n + 1;
    to[at] = 0.25 * (from[at - w] + from[at + w] + from[at - 1] + from[at + 1] + rhs[at]);
  }
};

// The largest |residual| of each interior row (residual scaled by h^2).
struct RowResidual {
  const double* u;
  const double* rhs;
  double* row_max;
  std::size_t n;
  CMDGRAPH_HOST_DEVICE void operator()(std::size_t row) const {
    const std::size_t w = n + 2;
    double worst = 0;
    for (std::size_t at = (row + 1) * w + 1; at < (row + 2) * w - 1; ++at) {
      const double r = u[at - w] + u[at + w] + u[at - 1] + u[at + 1] - 4 * u[at] + rhs[at];
      worst = r > worst ? r : (-r > worst ? -r : worst);
    }
    row_max[row] = worst;
  }
};

// Adds one to a pass counter.
struct CountPass {
  unsigned* passes;
  CMDGRAPH_HOST_DEVICE void operator()(std::size_t) const { ++*passes; }
};

// The loop's condition, evaluated where the loop runs: no pass yet, or the residual still
// above the tolerance and the sweep budget not spent.
struct Unconverged {
  const double* row_max;
  const unsigned* passes;
  std::size_t rows, max_passes;
  CMDGRAPH_HOST_DEVICE bool operator()() const {
    if (*passes == 0) return true;
    double worst = 0;
    for (std::size_t r = 0; r < rows; ++r) worst = row_max[r] > worst ? row_max[r] : worst;
    return worst > tolerance && *passes < max_passes;
  }
};

std::vector<double> right_hand_side(Grid g) {
  const double h = 1.0 / double(g.n + 1), pi = std::numbers::pi;
  std::vector<double> rhs(g.size(), 0.0);
  for (std::size_t r = 1; r <= g.n; ++r) {
    for (std::size_t c = 1; c <= g.n; ++c) {
      rhs[r * g.width() + c] = h * h * 2 * pi * pi * std::sin(pi * r * h) * std::sin(pi * c * h);
    }
  }
  return rhs;
}

// The same sweeps on the CPU, written plainly.
std::vector<double> reference_solution(Grid g, const std::vector<double>& rhs, std::size_t sweeps) {
  std::vector<double> u(g.size(), 0.0), v(g.size(), 0.0);
  const std::size_t w = g.width();
  for (std::size_t s = 0; s < sweeps; ++s) {
    for (std::size_t r = 1; r <= g.n; ++r) {
      for (std::size_t c = 1; c <= g.n; ++c) {
        const std::size_t at = r * w + c;
        v[at] = 0.25 * (u[at - w] + u[at + w] + u[at - 1] + u[at + 1] + rhs[at]);
      }
    }
    std::swap(u, v);
  }
  return u;
}

// The problem on one device: the grids, the residual per row, and their host copies.
struct Problem {
  Device device;
  Grid grid;
  std::vector<double> rhs;
  Buffer<double> u, v, f, row_max;
  HostBuffer<double> row_residual, solution;
  Queue queue;

  Problem(Device d, Grid g)
      : device(d), grid(g), rhs(right_hand_side(g)), u(d, g.size()), v(d, g.size()),
        f(d, g.size()), row_max(d, g.n), row_residual(g.n), solution(g.size()), queue(d) {}

  // u = v = 0 and f = rhs, on the device.
  void reset() {
    const std::vector<double> zeros(grid.size(), 0.0);
    CommandBuffer setup("setup");
    setup.copy(u, host_view(zeros.data(), zeros.size()), grid.size());
    setup.copy(v, host_view(zeros.data(), zeros.size()), grid.size());
    setup.copy(f, host_view(rhs.data(), rhs.size()), grid.size());
    compile(setup, device).launch(queue).wait();
  }

  // Records one pass: sweeps u -> v -> u ..., then the residual of u per row; returns the last.
  Command record_pass(CommandBuffer& cmd) {
    Command last;
    for (int s = 0; s < sweeps_per_pass; ++s) {
      const double* from = s % 2 ? v.data() : u.data();
      double* to = s % 2 ? u.data() : v.data();
      Command sweep = cmd.parallel_for(grid.n * grid.n, JacobiSweep{from, to, f.data(), grid.n});
      if (last.valid()) sweep.after(last);
      last = sweep;
    }
    return cmd.parallel_for(grid.n, RowResidual{u.data(), f.data(), row_max.data(), grid.n})
        .after(last);
  }

  // True when the solution, after `sweeps` sweeps, equals the CPU's and is close to the exact
  // sin(pi x) sin(pi y); prints both differences.
  bool check(std::size_t sweeps) {
    CommandBuffer download("download");
    download.copy(solution, u, grid.size());
    compile(download, device).launch(queue).wait();
    const std::vector<double> want = reference_solution(grid, rhs, sweeps);
    double from_reference = 0, from_exact = 0;
    const double h = 1.0 / double(grid.n + 1), pi = std::numbers::pi;
    for (std::size_t r = 1; r <= grid.n; ++r) {
      for (std::size_t c = 1; c <= grid.n; ++c) {
        const std::size_t at = r * grid.width() + c;
        from_reference = std::max(from_reference, std::abs(solution[at] - want[at]));
        const double exact = std::sin(pi * r * h) * std::sin(pi * c * h);
        from_exact = std::max(from_exact, std::abs(solution[at] - exact));
      }
    }
    std::printf("    largest difference from the CPU reference %.1e, from sin(pi x) sin(pi y) %.1e\n",
                from_reference, from_exact);
    return from_reference < 1e-12 && from_exact < 1e-3;
  }

  double largest_residual() const {
    return *std::max_element(row_residual.begin(), row_residual.end());
  }
};

// Re-launches a one-pass executable; the host reads the residual every `check_every`
// launches (launches of one executable run in order, so it is the newest).
bool solve_with_host_checks(Problem& p) {
  p.reset();
  CommandBuffer step("jacobi step");
  p.record_pass(step);
  step.barrier();
  step.copy(p.row_residual, p.row_max, p.grid.n);
  Executable exe = compile(step, p.device);
  std::size_t launches = 0;
  double residual = HUGE_VAL;
  const sample::Stopwatch clock;
  while (residual > tolerance && launches * sweeps_per_pass < p.grid.max_sweeps()) {
    for (int k = 0; k < check_every; ++k) exe.launch(p.queue);
    launches += check_every;
    p.queue.wait();
    residual = p.largest_residual();
  }
  const double ms = clock.ms();
  const std::size_t sweeps = launches * sweeps_per_pass;
  std::printf("  host checks:    %s after %zu sweeps (%zu launches, %zu host checks) in %.1f ms, "
              "residual %.2e\n",
              residual <= tolerance ? "converged" : "NOT converged", sweeps, launches,
              launches / check_every, ms, residual);
  return residual <= tolerance && p.check(sweeps);
}

// One launch: a loop of passes while Unconverged holds, evaluated where the loop runs.
bool solve_in_one_launch(Problem& p) {
  p.reset();
  Buffer<unsigned> passes(p.device, 1);
  HostBuffer<unsigned> passes_done(1);
  CommandBuffer pass("jacobi pass");
  Command residual = p.record_pass(pass);
  pass.parallel_for(1, CountPass{passes.data()}).after(residual);
  CommandBuffer solve("solve");
  auto start = solve.fill(passes, 0u, 1);
  const Unconverged unconverged{p.row_max.data(), passes.data(), p.grid.n,
                                p.grid.max_sweeps() / sweeps_per_pass};
  auto loop = solve.loop_while(pass, unconverged).after(start).named("until converged");
  solve.copy(p.row_residual, p.row_max, p.grid.n).after(loop);
  solve.copy(passes_done, passes, 1).after(loop);
  Executable exe = compile(solve, p.device);
  const sample::Stopwatch clock;
  exe.launch(p.queue).wait();
  const double ms = clock.ms();
  const std::size_t sweeps = std::size_t{passes_done[0]} * sweeps_per_pass;
  const double left = p.largest_residual();
  std::printf("  one loop_while: %s after %zu sweeps (1 launch, %s backend) in %.1f ms, "
              "residual %.2e\n",
              left <= tolerance ? "converged" : "NOT converged", sweeps,
              to_string(exe.backend()), ms, left);
  return left <= tolerance && p.check(sweeps);
}

}  // namespace

int main(int argc, char** argv) {
  const Device device = Device::best();
  Problem problem(device, Grid{sample::flag(argc, argv, "--size", 64)});
  std::printf("iterate: Jacobi on a %zu x %zu grid on %s to a residual of %.0e\n",
              problem.grid.n, problem.grid.n, device.name().c_str(), tolerance);
  bool ok = solve_with_host_checks(problem);
  ok &= solve_in_one_launch(problem);
  return sample::verdict("iterate", ok);
}
