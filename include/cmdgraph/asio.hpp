// Boost.Asio integration: async_wait(fence, token), an Asio asynchronous operation that
// completes when a Fence signals, for Asio's coroutines, futures and callbacks. Optional:
// installed when Boost.Asio was found; include it after (or instead of) cmdgraph.hpp.
#pragma once

#include <cmdgraph/fence.hpp>

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/execution.hpp>
#include <boost/asio/execution_context.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/query.hpp>
#include <boost/asio/system_executor.hpp>

#include <condition_variable>
#include <exception>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <type_traits>
#include <utility>

namespace cmdgraph {

namespace detail {

// The completion of a wait crosses threads: cmdgraph's callback thread posts it to the
// handler's executor. An execution context destroyed as soon as its run() returned must not be
// inside that post, nor be touched afterwards, so the waits of each context are registered with
// a service of that context, as Asio's own I/O objects are: its shutdown waits for a post under
// way and destroys the handlers of waits still pending, and a fence signalling later finds its
// wait abandoned.
struct FenceWaitRegistry {
  struct Wait {
    virtual ~Wait() = default;
    virtual void destroy_handler() noexcept = 0;
    bool abandoned = false;  // guarded by the registry's mutex
  };
  std::mutex mutex;
  std::condition_variable idle;
  std::list<std::shared_ptr<Wait>> waits;
  int posting = 0;
  bool shut_down = false;
};

class FenceWaitService final : public boost::asio::execution_context::service {
 public:
  using key_type = FenceWaitService;
  inline static boost::asio::execution_context::id id;

  explicit FenceWaitService(boost::asio::execution_context& context)
      : boost::asio::execution_context::service(context),
        registry_(std::make_shared<FenceWaitRegistry>()) {}
  const std::shared_ptr<FenceWaitRegistry>& registry() const noexcept { return registry_; }

 private:
  void shutdown() override {
    std::list<std::shared_ptr<FenceWaitRegistry::Wait>> pending;
    {
      std::unique_lock lock(registry_->mutex);
      registry_->shut_down = true;
      registry_->idle.wait(lock, [&] { return registry_->posting == 0; });
      pending.swap(registry_->waits);
      for (auto& wait : pending) wait->abandoned = true;
    }
    for (auto& wait : pending) wait->destroy_handler();
  }
  std::shared_ptr<FenceWaitRegistry> registry_;
};

// The context whose service registers waits completing on `executor`: the executor's own, or
// Asio's system context for one that names none (use_future's runs its handlers there).
template <class Executor>
boost::asio::execution_context& context_of(const Executor& executor) {
  if constexpr (boost::asio::can_query<const Executor&, boost::asio::execution::context_t>::value) {
    return boost::asio::query(executor, boost::asio::execution::context);
  } else if constexpr (requires { executor.context(); }) {
    return executor.context();
  } else {
    return boost::asio::query(boost::asio::system_executor(), boost::asio::execution::context);
  }
}

template <class Handler>
class FenceWait final : public FenceWaitRegistry::Wait,
                        public std::enable_shared_from_this<FenceWait<Handler>> {
 public:
  using Work = decltype(boost::asio::make_work_guard(std::declval<Handler&>()));

  FenceWait(Handler&& handler, std::shared_ptr<FenceWaitRegistry> registry)
      : work_(boost::asio::make_work_guard(handler)),  // before the handler moves
        handler_(std::move(handler)),
        registry_(std::move(registry)) {}

  // On cmdgraph's callback thread, once the fence signalled.
  void complete(std::exception_ptr error) {
    const std::shared_ptr<FenceWaitRegistry> registry = registry_;
    {
      std::lock_guard lock(registry->mutex);
      if (abandoned) return;
      ++registry->posting;
      registry->waits.erase(position_);
    }
    struct Posting {  // ends last: after the post and the executor copy are done with
      FenceWaitRegistry& registry;
      ~Posting() {
        std::lock_guard lock(registry.mutex);
        if (--registry.posting == 0) registry.idle.notify_all();
      }
    } posting{*registry};
    auto executor = work_->get_executor();
    boost::asio::post(std::move(executor), [self = this->shared_from_this(), error] {
      self->run(error);
    });
  }

  void destroy_handler() noexcept override {
    handler_.reset();
    work_.reset();
  }

  std::list<std::shared_ptr<FenceWaitRegistry::Wait>>::iterator position_;

 private:
  // On the handler's executor.
  void run(std::exception_ptr error) {
    Handler handler = std::move(*handler_);
    handler_.reset();
    std::move(handler)(error);
    work_.reset();
  }

  std::optional<Work> work_;
  std::optional<Handler> handler_;
  std::shared_ptr<FenceWaitRegistry> registry_;
};

struct FenceWaitInitiation {
  template <class Handler>
  void operator()(Handler&& handler, const Fence& fence) const {
    using Wait = FenceWait<std::decay_t<Handler>>;
    auto& context = context_of(boost::asio::get_associated_executor(handler));
    std::shared_ptr<FenceWaitRegistry> registry =
        boost::asio::use_service<FenceWaitService>(context).registry();
    std::decay_t<Handler> own(std::forward<Handler>(handler));
    auto wait = std::make_shared<Wait>(std::move(own), registry);
    {
      std::lock_guard lock(registry->mutex);
      if (registry->shut_down) return;  // the context is going away: the handler with it
      wait->position_ = registry->waits.insert(registry->waits.end(), wait);
    }
    fence.then([wait](std::exception_ptr error) { wait->complete(error); });
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
/// is awaited. Destroying the executor's context (the io_context) before the fence signalled
/// destroys the handler without calling it, as Asio does with its own pending operations.
/// \pre `fence` may be any Fence, default-constructed (already signalled) included. The wait
/// cannot be cancelled: it ends when the fence signals or the context is destroyed.
template <class CompletionToken>
auto async_wait(const Fence& fence, CompletionToken&& token) {
  return boost::asio::async_initiate<CompletionToken, void(std::exception_ptr)>(
      detail::FenceWaitInitiation{}, token, fence);
}

}  // namespace cmdgraph
