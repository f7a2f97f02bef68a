// Test cases that need a process of their own (a process-wide state such as CUPTI's one
// subscriber, or a library loaded once): the parent case runs this test binary again with one
// test case selected and an environment of its own, and checks that the child passed. The child
// case returns at once unless `marker` is set, so it does nothing in the parent's run.
#pragma once

#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace cmdgraph::testing {

/// True in the child process that `run_child(marker, ...)` started.
inline bool in_child(const char* marker) { return std::getenv(marker) != nullptr; }

/// Runs test case `test_case` of this binary in a process of its own, with `marker=1` and
/// `environment` ("NAME=value ..." or empty) set, and checks that it passed.
inline void run_child(const char* marker, const char* test_case,
                      const std::string& environment = {}) {
  const std::string command = std::string(marker) + "=1 " + environment + " /proc/" +
                              std::to_string(getpid()) + "/exe --test-case=" + test_case +
                              " --success=0";
  const int status = std::system(command.c_str());
  CHECK_MESSAGE(status == 0, "the child process (" << command << ") ended with " << status);
}

}  // namespace cmdgraph::testing
