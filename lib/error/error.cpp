// cmdgraph::Error and its std::error_category.
#include <cmdgraph/error.hpp>
#include <string>

namespace cmdgraph {
namespace {

class Category final : public std::error_category {
 public:
  const char* name() const noexcept override { return "cmdgraph"; }
  std::string message(int value) const override { return to_string(static_cast<errc>(value)); }
};

}  // namespace

const std::error_category& error_category() noexcept {
  static const Category category;
  return category;
}

const char* to_string(errc e) noexcept {
  switch (e) {
    case errc::ok: return "ok";
    case errc::cycle: return "cycle";
    case errc::self_edge: return "self edge";
    case errc::foreign_handle: return "foreign handle";
    case errc::invalid_handle: return "invalid handle";
    case errc::stale_handle: return "stale handle";
    case errc::wrong_state: return "wrong state";
    case errc::invalid_argument: return "invalid argument";
    case errc::unsupported: return "unsupported";
    case errc::device_mismatch: return "device mismatch";
    case errc::cuda_error: return "CUDA error";
    case errc::host_task_failed: return "host task failed";
    case errc::update_refused: return "update refused";
    case errc::timeout: return "timeout";
    case errc::no_device: return "no such device";
    case errc::out_of_memory: return "out of memory";
    case errc::concurrent_use: return "concurrent use";
    case errc::hazard: return "hazard";
    case errc::nccl_error: return "NCCL error";
  }
  return "unknown";
}

Error::Error(errc code, const std::string& message, std::vector<std::string> commands,
             int cuda_status)
    : std::runtime_error(message), code_(code), commands_(std::move(commands)),
      cuda_status_(cuda_status) {}

}  // namespace cmdgraph
