// Jacobi iteration to convergence by re-launching one executable (a batch of sweeps and the
// residual per launch), the host checking the residual every few launches. [--size N]
#include "sample.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numbers>
#include <vector>

using namespace cmdgraph;

namespace {

constexpr int sweeps_per_launch = 16;  // even: every launch ends with the solution back in u
constexpr int check_every = 8;         // launches between two residual checks on the host
constexpr double tolerance = 1e-10;

// The discrete Poisson problem -laplace(u) = f on the unit square, u = 0 on the boundary,
// stored with its boundary as (n + 2) x (n + 2) values; `rhs` holds h^2 f.
struct Grid {
  std::size_t n;
  std::size_t width() const { return n + 2; }
  std::size_t size() const { return width() * width(); }
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

}  // namespace

int main(int argc, char** argv) {
  const Device device = Device::best();
  const Grid grid{sample::flag(argc, argv, "--size", 64)};
  const std::vector<double> rhs = right_hand_side(grid);
  const std::vector<double> zeros(grid.size(), 0.0);
  Buffer<double> u(device, grid.size()), v(device, grid.size()), f(device, grid.size());
  Buffer<double> row_max(device, grid.n);
  HostBuffer<double> row_residual(grid.n), solution(grid.size());
  Queue queue(device);

  CommandBuffer setup("setup");
  setup.copy(u, host_view(zeros.data(), zeros.size()), grid.size());
  setup.copy(v, host_view(zeros.data(), zeros.size()), grid.size());
  setup.copy(f, host_view(rhs.data(), rhs.size()), grid.size());
  compile(setup, device).launch(queue).wait();

  // One launch: sweeps u -> v -> u ..., then the residual of u, copied to the host.
  CommandBuffer step("jacobi step");
  Command last;
  for (int s = 0; s < sweeps_per_launch; ++s) {
    const double* from = s % 2 ? v.data() : u.data();
    double* to = s % 2 ? u.data() : v.data();
    Command sweep = step.parallel_for(grid.n * grid.n, JacobiSweep{from, to, f.data(), grid.n});
    if (last.valid()) sweep.after(last);
    last = sweep;
  }
  const RowResidual residual_of_u{u.data(), f.data(), row_max.data(), grid.n};
  auto residual = step.parallel_for(grid.n, residual_of_u).after(last);
  step.copy(row_residual, row_max, grid.n).after(residual);
  Executable exe = compile(step, device);

  // The loop's test runs on the host: CUDA's conditional (WHILE) graph nodes could keep it on
  // the device, but cmdgraph has none. Every `check_every` launches the host reads the residual
  // of the latest launch; launches of one executable run in order, so that is the newest.
  const std::size_t max_sweeps = 40 * grid.n * grid.n;
  std::size_t launches = 0;
  double largest_residual = HUGE_VAL;
  const sample::Stopwatch clock;
  while (largest_residual > tolerance && launches * sweeps_per_launch < max_sweeps) {
    for (int k = 0; k < check_every; ++k) exe.launch(queue);
    launches += check_every;
    queue.wait();
    largest_residual = *std::max_element(row_residual.begin(), row_residual.end());
  }
  const double elapsed_ms = clock.ms();
  const std::size_t sweeps = launches * sweeps_per_launch;

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
  std::printf("iterate: Jacobi on a %zu x %zu grid on %s: %s after %zu sweeps (%zu launches, "
              "%zu host checks) in %.1f ms, residual %.2e (tolerance %.0e)\n",
              grid.n, grid.n, device.name().c_str(),
              largest_residual <= tolerance ? "converged" : "NOT converged", sweeps, launches,
              launches / check_every, elapsed_ms, largest_residual, tolerance);
  std::printf("largest difference from the CPU reference %.1e, from sin(pi x) sin(pi y) %.1e\n",
              from_reference, from_exact);
  return sample::verdict("iterate", largest_residual <= tolerance && from_reference < 1e-12 &&
                                        from_exact < 1e-3);
}
