// Libraries the CUDA backends use only for some features (CUPTI, NCCL), loaded when a feature
// first needs them rather than linked: a program that never profiles with CUPTI or runs a
// collective needs neither at link time nor at run time, and one that does gets an Error
// saying which library is missing and how to point cmdgraph at it.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace cmdgraph::detail::cuda {

/// One loaded shared library, kept loaded for the life of the process (CUPTI may call back into
/// the process, and NCCL's threads may still run, until exit).
class LoadedLibrary {
 public:
  /// Loads the library `what` (e.g. "NCCL") from the path in environment variable
  /// `override_variable` when it is set, else from the first of `candidates` that loads (paths
  /// or file names the dynamic loader searches). Throws Error(unsupported) naming `what`, every
  /// path tried with the loader's reason, and the variable to set.
  static LoadedLibrary open(std::string_view what, std::span<const std::string_view> candidates,
                            const char* override_variable);

  /// The address of function `name`; throws Error(unsupported) naming the library, its path and
  /// `name` when it has none (a library older than the one cmdgraph was built against).
  void* symbol(const char* name) const;

  /// The path or file name it was loaded from.
  const std::string& path() const noexcept { return path_; }

 private:
  LoadedLibrary(void* handle, std::string what, std::string path)
      : handle_(handle), what_(std::move(what)), path_(std::move(path)) {}
  void* handle_;
  std::string what_;
  std::string path_;
};

/// Sets `function` to the address of `name` in `library`.
template <class Function>
void resolve(const LoadedLibrary& library, Function*& function, const char* name) {
  function = reinterpret_cast<Function*>(library.symbol(name));
}
/// For an X-macro list of functions: resolves member `name` of table `f` from `library`.
#define CMDGRAPH_RESOLVE_FUNCTION(name) resolve(library, f.name, #name);

/// The table of `what`'s functions, loaded (LoadedLibrary::open) and filled by `fill` on the
/// first call that succeeds; later calls return it. Thread-safe.
template <class Functions>
const Functions& loaded_once(std::string_view what, std::span<const std::string_view> candidates,
                             const char* override_variable,
                             void (*fill)(const LoadedLibrary&, Functions&)) {
  static const Functions functions = [&] {
    Functions f;
    fill(LoadedLibrary::open(what, candidates, override_variable), f);
    return f;
  }();
  return functions;
}

}  // namespace cmdgraph::detail::cuda
