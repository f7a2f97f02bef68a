// dlopen and dlsym behind LoadedLibrary, with errors that say what to do.
#include "cuda/loaded_library.hpp"

#include <cmdgraph/error.hpp>

#include <dlfcn.h>

#include <cstdlib>
#include <vector>

namespace cmdgraph::detail::cuda {
namespace {

std::string loader_error() {
  const char* reason = dlerror();
  return reason ? reason : "unknown reason";
}

}  // namespace

LoadedLibrary LoadedLibrary::open(std::string_view what,
                                  std::span<const std::string_view> candidates,
                                  const char* override_variable) {
  std::vector<std::string> tried;
  const char* chosen = std::getenv(override_variable);
  if (chosen && *chosen) tried.emplace_back(chosen);
  else tried.assign(candidates.begin(), candidates.end());

  std::string reasons;
  for (const std::string& path : tried) {
    // RTLD_LOCAL: its symbols stay out of the process's global scope, so they never take the
    // place of another copy the program linked itself; RTLD_NOW: a broken library fails here.
    if (void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      return LoadedLibrary(handle, std::string(what), path);
    }
    reasons += "\n  " + loader_error();
  }
  std::string message = std::string(what) + " could not be loaded; tried:" + reasons + "\n";
  message += chosen && *chosen
                 ? std::string("(the path came from ") + override_variable + ")"
                 : std::string("set ") + override_variable + " to the library's path, or add "
                       "its folder to LD_LIBRARY_PATH";
  throw Error(errc::unsupported, message);
}

void* LoadedLibrary::symbol(const char* name) const {
  dlerror();  // clear an earlier failure, so the one read below is this lookup's
  void* address = dlsym(handle_, name);
  if (!address) {
    throw Error(errc::unsupported, what_ + " at " + path_ + " has no " + name +
                                       " (older than the one cmdgraph was built against?): " +
                                       loader_error());
  }
  return address;
}

}  // namespace cmdgraph::detail::cuda
