// ShapingChoice (which shaping tried by timed launches wins) against brute force: over random
// ratios, trying stops exactly at the first candidate beyond the margin of the best before it,
// and the winner is the fewest lanes within the margin of the best tried, the plan's graph
// (ratio 1) included.
#include "plan/shaping_choice.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <optional>
#include <random>
#include <vector>

using cmdgraph::detail::median_ratio;
using cmdgraph::detail::ShapingChoice;

TEST_CASE("plan.shaping_choice.fewest_lanes_within_the_margin_of_the_best") {
  constexpr double within = 0.02;
  std::mt19937 rng(4242);
  std::uniform_real_distribution<double> spread(0.7, 1.4);
  for (int round = 0; round < 2000; ++round) {
    std::vector<double> ratios(1 + rng() % 6);
    for (double& r : ratios) r = spread(rng);
    CAPTURE(round);
    ShapingChoice choice(within);
    std::size_t tried = 0;
    while (tried < ratios.size() && choice.judge(tried, ratios[tried])) ++tried;
    // Brute force: the first candidate beyond the margin of the best candidate before it
    // ends trying (the plan's graph ends none: the most lanes can lose to it, fewer win).
    std::size_t stop = ratios.size();
    for (std::size_t j = 1; j < ratios.size() && stop == ratios.size(); ++j) {
      const double best = *std::min_element(ratios.begin(), ratios.begin() + j);
      if (ratios[j] > best + within) stop = j;
    }
    CHECK(tried == stop);
    double best = 1.0;
    for (std::size_t k = 0; k < stop; ++k) best = std::min(best, ratios[k]);
    std::optional<std::size_t> fewest;  // candidates come with fewer lanes each
    for (std::size_t k = 0; k < stop; ++k) {
      if (ratios[k] <= best + within) fewest = k;
    }
    CHECK(choice.winner() == fewest);
    CHECK(choice.best() == best);
  }
}

TEST_CASE("plan.shaping_choice.a_candidate_slower_than_the_plan_graph_never_wins") {
  ShapingChoice choice(0.02);
  CHECK(choice.judge(0, 1.03));  // fewer lanes are still tried
  CHECK_FALSE(choice.winner());
  CHECK(choice.judge(1, 0.9));  // seen: 117 lanes at 1.05x of the plan's graph, 37 at 0.88x
  CHECK(choice.winner() == 1u);
  CHECK_FALSE(choice.judge(2, 0.93));
  CHECK(choice.winner() == 1u);
  ShapingChoice close(0.02);
  CHECK(close.judge(0, 1.01));  // within the margin of the plan's graph: fewer to launch
  CHECK(close.winner() == 0u);
  CHECK(close.hopeless(1.3, 0.25));
  CHECK_FALSE(close.hopeless(1.2, 0.25));
}

TEST_CASE("plan.shaping_choice.median_ratio") {
  const std::array<double, 3> odd{1.2, 0.8, 1.0};
  CHECK(median_ratio(odd) == 1.0);
  const std::array<double, 4> even{0.9, 1.3, 0.7, 1.1};
  CHECK(median_ratio(even) == doctest::Approx(1.0));
}
