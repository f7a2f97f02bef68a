// Loading CUPTI and NCCL when first needed (lib/cuda/loaded_library.hpp), without a GPU: the
// copies this build was configured against load and have their functions; a missing library,
// a missing function and the environment's override each give an Error that says what was
// tried and what to do.
#include "cuda/loaded_library.hpp"
#include "library_paths.hpp"

#include <cmdgraph/error.hpp>

#include <doctest/doctest.h>

#include <cstdlib>
#include <ostream>  // doctest prints errc through std::error_code's operator<<
#include <string>
#include <string_view>
#include <vector>

using cmdgraph::detail::cuda::LoadedLibrary;

namespace {

constexpr const char* unset_variable = "CMDGRAPH_TEST_NO_SUCH_VARIABLE";
constexpr const char* override_variable = "CMDGRAPH_TEST_LIBRARY";

std::string refusal(std::span<const std::string_view> candidates, const char* variable) {
  try {
    (void)LoadedLibrary::open("Test library", candidates, variable);
  } catch (const cmdgraph::Error& e) {
    CHECK(e.code() == cmdgraph::errc::unsupported);
    return e.what();
  }
  FAIL("the library loaded");
  return {};
}

// The configured candidates of a library this build has ("" when it has none).
std::vector<std::string_view> configured(std::initializer_list<std::string_view> candidates) {
  std::vector<std::string_view> found;
  for (std::string_view c : candidates) {
    if (!c.empty()) found.push_back(c);
  }
  return found;
}

}  // namespace

TEST_CASE("loaded_library.configured_copies_load_with_every_function") {
  struct Case {
    std::vector<std::string_view> candidates;
    std::vector<const char*> functions;
  };
  const Case cases[] = {
      {configured({CMDGRAPH_CUPTI_CANDIDATES}),
       {"cuptiSubscribe_v2", "cuptiActivityEnable", "cuptiGetResultString"}},
      {configured({CMDGRAPH_NCCL_CANDIDATES}),
       {"ncclGetUniqueId", "ncclCommInitRank", "ncclAllReduce", "ncclGetErrorString"}},
  };
  int tried = 0;
  for (const Case& c : cases) {
    if (c.candidates.empty()) continue;  // this build has no such library
    ++tried;
    const LoadedLibrary library = LoadedLibrary::open("Test library", c.candidates,
                                                      unset_variable);
    CHECK(library.path() == c.candidates.front());  // the copy found when configuring
    for (const char* function : c.functions) CHECK(library.symbol(function) != nullptr);
  }
  MESSAGE(tried << " configured libraries loaded");
  CHECK(tried > 0);
}

TEST_CASE("loaded_library.missing_library_names_every_path_tried_and_the_variable") {
  const std::string_view candidates[] = {"/nonexistent/libcmdgraph_test.so.2",
                                         "libcmdgraph_no_such_library.so"};
  const std::string message = refusal(candidates, unset_variable);
  CHECK(message.find("Test library could not be loaded") != std::string::npos);
  CHECK(message.find("/nonexistent/libcmdgraph_test.so.2") != std::string::npos);
  CHECK(message.find("libcmdgraph_no_such_library.so") != std::string::npos);
  CHECK(message.find("No such file") != std::string::npos);
  CHECK(message.find(std::string("set ") + unset_variable) != std::string::npos);
}

TEST_CASE("loaded_library.the_variable_chooses_the_path") {
  const std::vector<std::string_view> real = [] {
    auto nccl = configured({CMDGRAPH_NCCL_CANDIDATES});
    return nccl.empty() ? configured({CMDGRAPH_CUPTI_CANDIDATES}) : nccl;
  }();
  REQUIRE(!real.empty());

  // Set: only its path is tried, even where a candidate would load.
  REQUIRE(setenv(override_variable, "/nonexistent/chosen.so", 1) == 0);
  const std::string message = refusal(real, override_variable);
  CHECK(message.find("/nonexistent/chosen.so") != std::string::npos);
  CHECK(message.find(std::string(real.front())) == std::string::npos);
  CHECK(message.find(std::string("came from ") + override_variable) != std::string::npos);

  // A path that loads.
  const std::string chosen(real.front());
  REQUIRE(setenv(override_variable, chosen.c_str(), 1) == 0);
  const std::string_view none[] = {"/nonexistent/not_this_one.so"};
  CHECK(LoadedLibrary::open("Test library", none, override_variable).path() == chosen);

  // Empty: as if unset.
  REQUIRE(setenv(override_variable, "", 1) == 0);
  CHECK(LoadedLibrary::open("Test library", real, override_variable).path() == real.front());
  unsetenv(override_variable);
}

TEST_CASE("loaded_library.missing_function_names_it_and_the_library") {
  auto real = configured({CMDGRAPH_NCCL_CANDIDATES});
  if (real.empty()) real = configured({CMDGRAPH_CUPTI_CANDIDATES});
  REQUIRE(!real.empty());
  const LoadedLibrary library = LoadedLibrary::open("Test library", real, unset_variable);
  try {
    (void)library.symbol("cmdgraph_no_such_function");
    FAIL("a function that does not exist was found");
  } catch (const cmdgraph::Error& e) {
    const std::string message = e.what();
    CHECK(e.code() == cmdgraph::errc::unsupported);
    CHECK(message.find("cmdgraph_no_such_function") != std::string::npos);
    CHECK(message.find(library.path()) != std::string::npos);
  }
}
