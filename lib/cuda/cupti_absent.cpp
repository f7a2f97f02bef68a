// A build without CUPTI: the session never starts and says why; nothing calls CUPTI.
#include "cuda/cupti_session.hpp"
#include "cuda/fault_injection.hpp"

#include <cmdgraph/error.hpp>

namespace cmdgraph::detail::cuda {

FaultCounter& CuptiFaultInjection::counter() {
  static std::atomic<bool> unread{false};  // no door reads it
  static FaultCounter calls(unread);
  return calls;
}
bool CuptiFaultInjection::available() { return false; }

namespace cupti {
namespace {
[[noreturn]] void absent() {
  throw Error(errc::unsupported, "this build of cmdgraph has no CUPTI");
}
}  // namespace

std::vector<Record> LaunchRecords::records() const { return {}; }
std::size_t LaunchRecords::size() const { return 0; }
std::uint32_t LaunchRecords::correlation() const { return 0; }
std::string LaunchRecords::error() const { return "this build of cmdgraph has no CUPTI"; }

Session* Session::acquire(std::string& why) {
  why = "this build of cmdgraph has no CUPTI (it needs cupti.h and libcupti from the CUDA "
        "toolkit: -Dcupti=enabled)";
  return nullptr;
}

bool Session::started() { return false; }

// No session ever exists, so none of these can be reached.
void Session::flush(bool) { absent(); }
std::int64_t Session::steady_to_cupti() { absent(); }
Session::Lost Session::lost() const { return {}; }
int Session::collecting() const { return 0; }
std::vector<Record> Session::unclaimed(std::uint64_t) const { return {}; }
Session::Collecting::Collecting(Session& session, unsigned what)
    : session_(session), what_(what) {
  absent();
}
Session::Collecting::~Collecting() = default;
Session::Window::Window(Session&, std::shared_ptr<LaunchRecords>, unsigned) { absent(); }
Session::Window::~Window() = default;

CloneLog::CloneLog() : previous_(nullptr) {}
CloneLog::~CloneLog() = default;
std::vector<std::pair<std::uint64_t, std::uint64_t>> CloneLog::take(Served) { return {}; }

std::uint64_t node_id(cudaGraphNode_t, Served) { absent(); }

}  // namespace cupti
}  // namespace cmdgraph::detail::cuda
