// Value rules for kernels, copies and fills: counts within views (in elements), no overlapping
// copies, non-zero launch dimensions, fill widths.
#include "record/validate.hpp"

#include <cstdint>
#include <string>

namespace cmdgraph::detail {
namespace {

std::string problem_with(const MemoryRange& r, const char* role) {
  if (r.count == 0) return std::string("zero-size ") + role;
  if (r.data == nullptr) return std::string("null ") + role;
  // In elements: count * element_size may overflow, capacity / element_size cannot.
  const std::size_t holds = r.capacity / r.element_size;
  if (r.count > holds) {
    return std::string(role) + " holds " + std::to_string(holds) + " elements (" +
           std::to_string(r.capacity) + " bytes), the command needs " + std::to_string(r.count);
  }
  return {};
}

bool has_zero(const Dim3& d) { return d.x == 0 || d.y == 0 || d.z == 0; }

}  // namespace

std::string problem_with(const LaunchConfig& config) {
  if (has_zero(config.grid) || has_zero(config.block)) {
    return "grid and block dimensions must be non-zero";
  }
  return {};
}

std::string problem_with(const CopySpec& copy) {
  std::string p = problem_with(copy.dst, "destination");
  if (p.empty()) p = problem_with(copy.src, "source");
  if (!p.empty()) return p;
  // cudaMemcpy leaves overlapping copies undefined; with unified addressing, two ranges of
  // any spaces overlap exactly when their addresses do.
  const auto dst = reinterpret_cast<std::uintptr_t>(copy.dst.data);
  const auto src = reinterpret_cast<std::uintptr_t>(copy.src.data);
  const std::size_t bytes = copy.dst.bytes;
  if (dst < src + bytes && src < dst + bytes) {
    return "source and destination overlap (" + std::to_string(bytes) + " bytes each, " +
           std::to_string(dst > src ? dst - src : src - dst) + " bytes apart)";
  }
  return {};
}

std::string problem_with(const FillSpec& fill) {
  if (fill.element_size != 1 && fill.element_size != 2 && fill.element_size != 4) {
    return "fill elements must be 1, 2 or 4 bytes";
  }
  return problem_with(fill.dst, "destination");
}

}  // namespace cmdgraph::detail
