// ShapingChoice: which of the shapings tried by timed launches wins (the cuda_graph backend's
// shape learning times them; the rule is here, apart from CUDA, where brute force checks it).
#pragma once

#include <cstddef>
#include <limits>
#include <optional>
#include <span>

namespace cmdgraph::detail {

/// The median of `ratios` (the mean of the middle two of an even count). \pre not empty.
double median_ratio(std::span<const double> ratios);

/// Shapings are tried from the most lanes to the fewest, each judged by its replay time as a
/// ratio of the plan graph's (which counts as 1). Fewer lanes cost the host less to launch,
/// so the winner is the candidate with the fewest lanes whose ratio is within `within` of the
/// best ratio tried (the plan graph's included); none when the plan's graph is that one.
/// Trying stops at the first candidate beyond `within` of the best candidate before it: fewer
/// lanes than a candidate too slow only run slower still. The plan's graph stops none: the
/// most lanes can replay slower than it where fewer replay faster (an H100 measured 117 lanes
/// at 1.05x of a random DAG's plan graph, 37 at 0.88x).
class ShapingChoice {
 public:
  explicit ShapingChoice(double within) noexcept : within_(within) {}

  /// Candidate `index` (tried in order) replayed at `ratio`; true while trying goes on.
  bool judge(std::size_t index, double ratio) noexcept;
  /// Whether one timing at `ratio` already tells the candidate loses by more than `margin`.
  bool hopeless(double ratio, double margin) const noexcept { return ratio > best_ + margin; }
  /// The candidate that wins so far; none: the plan's graph.
  std::optional<std::size_t> winner() const noexcept { return winner_; }
  double best() const noexcept { return best_; }

 private:
  double within_;
  double best_ = 1.0;  // the plan's graph's included
  double best_tried_ = std::numeric_limits<double>::infinity();
  std::optional<std::size_t> winner_;
};

}  // namespace cmdgraph::detail
