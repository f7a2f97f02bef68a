// task_failure: the current exception, nested inside an Error naming the command.
#include "error/task_failure.hpp"

#include <cmdgraph/error.hpp>

namespace cmdgraph::detail {

std::exception_ptr task_failure(const char* what_ran, const std::string& command) {
  std::string detail = "an exception that is not a std::exception";
  try {
    throw;
  } catch (const std::exception& e) {
    detail = e.what();
  } catch (...) {
  }
  try {
    std::throw_with_nested(Error(errc::host_task_failed,
                                 std::string(what_ran) + " '" + command + "' threw: " + detail,
                                 {command}));
  } catch (...) {
    return std::current_exception();
  }
}

}  // namespace cmdgraph::detail
