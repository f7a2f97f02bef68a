// task_failure: the current exception, nested inside an Error naming the command.
#include "error/task_failure.hpp"

#include <cmdgraph/error.hpp>

namespace cmdgraph::detail {

std::exception_ptr callback_failure() {
  try {
    throw;
  } catch (const Error&) {
    return std::current_exception();
  } catch (const std::exception& e) {
    const std::string what = e.what();
    try {
      std::throw_with_nested(Error(errc::host_task_failed, "a then() callback threw: " + what));
    } catch (...) {
      return std::current_exception();
    }
  } catch (...) {
    try {
      std::throw_with_nested(Error(errc::host_task_failed,
                                   "a then() callback threw an exception that is not a "
                                   "std::exception"));
    } catch (...) {
      return std::current_exception();
    }
  }
}

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
