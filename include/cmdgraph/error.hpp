// The one error type of cmdgraph: a code, the commands involved, and the CUDA status if any.
#pragma once

#include <stdexcept>
#include <string>
#include <system_error>
#include <type_traits>
#include <vector>

namespace cmdgraph {

/// What went wrong. Bound to std::error_code through error_category().
enum class errc {
  ok = 0,
  cycle,             ///< the dependency edges form a cycle; commands() lists it in order
  self_edge,         ///< a command was made to depend on itself
  foreign_handle,    ///< a handle of another command buffer was used
  invalid_handle,    ///< a default-constructed or moved-from handle or object was used
  stale_handle,      ///< a handle outlived its command buffer's recording (destroyed or reset)
  wrong_state,       ///< e.g. recording into a compiled buffer
  invalid_argument,  ///< null pointer, zero size, zero launch dimension, bad value size
  unsupported,       ///< the command cannot run on the chosen device or backend
  device_mismatch,   ///< memory, event or queue of another device
  cuda_error,        ///< a CUDA runtime call failed; cuda_status() holds its status (a CUPTI
                     ///< call failed: cuda_status() is 0, what() names the call)
  host_task_failed,  ///< a host task threw; the original exception is nested
  update_refused,    ///< the executable cannot take this update in place
  timeout,           ///< a timed wait ran out
  no_device,         ///< the requested device does not exist
  out_of_memory,     ///< an allocation failed
  concurrent_use,    ///< two threads used one command buffer or executable at once
  hazard,            ///< commands that touch the same memory, one writing, with no path
                     ///< between them (CompileOptions::hazards); commands() lists them
  nccl_error,        ///< an NCCL call failed, or NCCL reported an asynchronous error (a
                     ///< peer failed); cuda_status() holds its ncclResult_t
};

/// The error category of errc ("cmdgraph").
const std::error_category& error_category() noexcept;

/// `e` as a std::error_code of error_category(), so errc values compare with error codes.
inline std::error_code make_error_code(errc e) noexcept {
  return {static_cast<int>(e), error_category()};
}

/// Every failure cmdgraph reports is an Error. what() is a complete sentence naming the
/// commands involved; commands() gives the same names for programs to inspect.
class Error : public std::runtime_error {
 public:
  /// An error with code `code`, what() `message` (a complete sentence), the names of the
  /// commands involved and the cudaError_t (or ncclResult_t) behind it (0 where CUDA is not
  /// involved).
  Error(errc code, const std::string& message, std::vector<std::string> commands = {},
        int cuda_status = 0);

  /// What went wrong.
  errc code() const noexcept { return code_; }
  /// code() as a std::error_code.
  std::error_code error_code() const noexcept { return make_error_code(code_); }
  /// Names of the commands involved, in a meaningful order (a cycle lists its path).
  const std::vector<std::string>& commands() const noexcept { return commands_; }
  /// The cudaError_t value behind a cuda_error, the ncclResult_t behind an nccl_error, 0
  /// otherwise.
  int cuda_status() const noexcept { return cuda_status_; }

 private:
  errc code_;
  std::vector<std::string> commands_;
  int cuda_status_;
};

/// A short English name of the code, e.g. "cycle".
const char* to_string(errc e) noexcept;

}  // namespace cmdgraph

/// \cond
/// Makes errc values convert to std::error_code.
template <>
struct std::is_error_code_enum<cmdgraph::errc> : std::true_type {};
/// \endcond
