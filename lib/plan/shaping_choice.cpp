// ShapingChoice: the fewest lanes within a margin of the best replay.
#include "plan/shaping_choice.hpp"

#include <algorithm>
#include <vector>

namespace cmdgraph::detail {

double median_ratio(std::span<const double> ratios) {
  std::vector<double> sorted(ratios.begin(), ratios.end());
  std::sort(sorted.begin(), sorted.end());
  const std::size_t half = sorted.size() / 2;
  return sorted.size() % 2 ? sorted[half] : (sorted[half - 1] + sorted[half]) / 2;
}

bool ShapingChoice::judge(std::size_t index, double ratio) noexcept {
  const bool goes_on = ratio <= best_tried_ + within_;
  best_tried_ = std::min(best_tried_, ratio);
  if (ratio <= best_ + within_) winner_ = index;
  best_ = std::min(best_, ratio);
  return goes_on;
}

}  // namespace cmdgraph::detail
