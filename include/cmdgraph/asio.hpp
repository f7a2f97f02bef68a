// Boost.Asio integration: async_wait(fence, token), an Asio asynchronous operation that
// completes when a Fence signals, for Asio's coroutines, futures and callbacks. Optional:
// installed when Boost.Asio was found; include it after (or instead of) cmdgraph.hpp.
#pragma once

#include <cmdgraph/fence.hpp>

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>

#include <exception>
#include <memory>
#include <type_traits>
#include <utility>

namespace cmdgraph {

namespace detail {

// Starts one wait: the handler and the work counted on its executor move into shared state,
// because Fence::then takes a copyable callable.
struct FenceWaitInitiation {
  template <class Handler>
  void operator()(Handler&& handler, const Fence& fence) const {
    using Work = decltype(boost::asio::make_work_guard(handler));
    struct Pending {
      std::decay_t<Handler> handler;
      Work work;
    };
    Work work = boost::asio::make_work_guard(handler);  // before the handler moves
    auto pending =
        std::make_shared<Pending>(Pending{std::forward<Handler>(handler), std::move(work)});
    fence.then([pending](std::exception_ptr error) {
      auto executor = pending->work.get_executor();
      boost::asio::post(std::move(executor), [pending, error]() mutable {
        auto handler = std::move(pending->handler);
        pending->work.reset();
        std::move(handler)(error);
      });
    });
  }
};

}  // namespace detail

/// Waits asynchronously for `fence`, as an Asio asynchronous operation with the completion
/// signature `void(std::exception_ptr)`: null when the work succeeded, else its error (the
/// cmdgraph::Error the fence's wait() would throw). Takes any completion token:
/// - `boost::asio::use_awaitable`: `co_await async_wait(f, use_awaitable)` in an Asio
///   coroutine resumes it when the fence signals and rethrows the work's error;
/// - `boost::asio::use_future`: a std::future<void> that rethrows the error from get();
/// - `boost::asio::deferred` (Boost 1.80 and later): an operation started later;
/// - a callback `void(std::exception_ptr)`, plain or bound to an executor.
///
/// Never blocks, and never completes inside the call, even for a signalled fence.
/// \post The completion handler runs on its associated executor: the coroutine's executor for
/// use_awaitable, the bound executor of a bound callback, Asio's system executor (a thread of
/// its own pool) for a plain callback or use_future. Until it has run, the operation counts
/// as outstanding work on that executor, so `io_context::run()` does not return while a fence
/// is awaited.
/// \pre `fence` may be any Fence, default-constructed (already signalled) included. The wait
/// cannot be cancelled: it ends when the fence signals.
template <class CompletionToken>
auto async_wait(const Fence& fence, CompletionToken&& token) {
  return boost::asio::async_initiate<CompletionToken, void(std::exception_ptr)>(
      detail::FenceWaitInitiation{}, token, fence);
}

}  // namespace cmdgraph
