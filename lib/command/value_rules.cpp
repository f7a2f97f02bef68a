// Value rules for kernels, copies, fills and collectives: counts within views (in elements), no
// overlapping copies, non-zero launch dimensions, fill widths, collective buffers on the rank's
// device and as large as the operation needs, roots and peers within the communicator.
#include "command/value_rules.hpp"

#include <cstdint>
#include <limits>
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

// A buffer of a collective: device memory of the rank's device holding `needed` elements,
// then narrowed to them (what the operation touches, for hazards).
std::string collective_memory(MemoryRange& r, std::size_t needed, int device, const char* role) {
  if (r.data == nullptr) return std::string("null ") + role;
  if (r.space != MemorySpace::device) {
    return std::string("its ") + role + " is host memory; NCCL reads and writes device memory";
  }
  if (r.device != device) {
    return std::string("its ") + role + " is memory of cuda:" + std::to_string(r.device) +
           ", but the communicator's rank runs on cuda:" + std::to_string(device);
  }
  r.count = needed;
  if (std::string p = problem_with(r, role); !p.empty()) return p;
  r.bytes = needed * r.element_size;
  return {};
}

// NCCL's in-place forms; any other overlap of source and destination is undefined.
bool overlaps(const MemoryRange& a, const MemoryRange& b) {
  const auto x = reinterpret_cast<std::uintptr_t>(a.data);
  const auto y = reinterpret_cast<std::uintptr_t>(b.data);
  return x < y + b.bytes && y < x + a.bytes;
}

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

std::string problem_with(const ValueSpec& v) {
  if (std::string p = problem_with(v.target, "target"); !p.empty()) return p;
  if (reinterpret_cast<std::uintptr_t>(v.target.data) % v.target.element_size != 0) {
    return "target is not aligned to its " + std::to_string(v.target.element_size) +
           "-byte value";
  }
  return {};
}

std::string problem_with(const IndirectSpec& indirect) {
  const IndirectForm form = indirect.form;
  const std::string source = reads_flag(form)              ? "flag"
                             : form == IndirectForm::grid ? "grid"
                                                           : "count";
  if (std::string p = problem_with(indirect.source, (source + " source").c_str()); !p.empty()) {
    return p;
  }
  const std::size_t align =
      form == IndirectForm::count ? indirect.source.element_size : alignof(std::uint32_t);
  if (reinterpret_cast<std::uintptr_t>(indirect.source.data) % align != 0) {
    return source + " source is not aligned to " + std::to_string(align) + " bytes";
  }
  if (form == IndirectForm::count && indirect.max_count == 0) return "zero max_count";
  if (form == IndirectForm::flag_count && indirect.max_count == 0) return "zero-size range";
  return runs_items(form) ? std::string() : problem_with(indirect.limit);
}

std::string prepare(CollectiveSpec& c, int ranks, int rank, int device) {
  if (c.count == 0) return "zero-size collective";
  if (c.count > std::numeric_limits<std::size_t>::max() / static_cast<std::size_t>(ranks)) {
    return "count " + std::to_string(c.count) + " times " + std::to_string(ranks) +
           " ranks overflows size_t";
  }
  const bool rooted = c.op == CollectiveOp::broadcast || c.op == CollectiveOp::reduce;
  if (rooted && (c.root < 0 || c.root >= ranks)) {
    return "root " + std::to_string(c.root) + " is no rank of a communicator of " +
           std::to_string(ranks);
  }
  const std::size_t all = c.count * static_cast<std::size_t>(ranks);
  const std::size_t send = c.op == CollectiveOp::reduce_scatter ? all : c.count;
  const std::size_t recv = c.op == CollectiveOp::all_gather ? all : c.count;
  std::string p = collective_memory(c.send, send, device, "source");
  if (p.empty()) p = collective_memory(c.recv, recv, device, "destination");
  if (!p.empty() || !overlaps(c.send, c.recv)) return p;
  // In place: the same memory, or this rank's block of the larger buffer.
  const auto s = reinterpret_cast<std::uintptr_t>(c.send.data);
  const auto r = reinterpret_cast<std::uintptr_t>(c.recv.data);
  const std::uintptr_t block = static_cast<std::uintptr_t>(rank) * c.count * c.send.element_size;
  const bool in_place = c.op == CollectiveOp::all_gather       ? s == r + block
                        : c.op == CollectiveOp::reduce_scatter ? r == s + block
                                                               : s == r;
  if (in_place) return {};
  return "source and destination overlap without being in place (the same memory, or for "
         "all_gather and reduce_scatter this rank's block of the larger buffer)";
}

std::string prepare(TransferSpec& t, int ranks, int device) {
  if (t.count == 0) return "zero-size transfer";
  if (t.peer < 0 || t.peer >= ranks) {
    return "peer " + std::to_string(t.peer) + " is no rank of a communicator of " +
           std::to_string(ranks);
  }
  return collective_memory(t.memory, t.count, device, t.sends ? "source" : "destination");
}

}  // namespace cmdgraph::detail
