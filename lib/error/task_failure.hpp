// The error a failed host task or host functor becomes: Error(host_task_failed) naming the
// command, with the original exception nested.
#pragma once

#include <exception>
#include <string>

namespace cmdgraph::detail {

/// Call only inside a catch block: wraps the exception being handled.
std::exception_ptr task_failure(const char* what_ran, const std::string& command);

/// Call only inside a catch block: the exception a then() callback threw, as every wait
/// reports errors: a cmdgraph::Error as it is, anything else nested in Error(host_task_failed).
std::exception_ptr callback_failure();

}  // namespace cmdgraph::detail
