// Executable's views for people: the last profile and DOT pictures.
#include "observe/dot.hpp"
#include "backend/executable_impl.hpp"

#include <cmdgraph/error.hpp>
#include <cmdgraph/executable.hpp>

#include <fstream>
#include <optional>

namespace cmdgraph {

Profile Executable::last_profile() const { return impl().last_profile(); }

std::vector<ClampedDispatch> Executable::clamped_dispatches() const {
  return impl().clamped_dispatches();
}

void Executable::write_dot(const std::string& path, const DotOptions& options) const {
  const detail::ExecutableImpl& exe = impl();
  std::optional<Profile> profile;
  if (options.timings && exe.profiling()) {
    try {
      profile = exe.last_profile();
    } catch (const Error& e) {
      if (e.code() != errc::wrong_state) throw;  // not launched yet
    }
  }
  const std::string dot =
      detail::plan_dot(exe.plan(), exe.command_lanes(), profile ? &*profile : nullptr, options);
  std::ofstream f(path, std::ios::binary);
  f << dot;
  f.close();  // buffered bytes reach the file here: a full disk shows only now
  if (!f) throw Error(errc::invalid_argument, "could not write '" + path + "'");
}

void Executable::write_cuda_dot(const std::string& path) const { impl().write_cuda_dot(path); }

}  // namespace cmdgraph
