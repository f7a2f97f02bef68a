// An Asio TCP server that awaits fences: every connection gets its own executable, and each
// request ("<factor>\n") updates and launches it, then co_awaits the launch through
// cmdgraph::async_wait, so one thread serves every connection while the device works. The
// sample starts the server on 127.0.0.1 and as many clients in the same io_context, checks
// every reply and prints the latencies. Runs on the GPU, or on the host backend without one.
//   [--clients N] [--requests N] [--elements N]   or   --serve PORT (serve until killed)
#include "sample.hpp"
#include "scale_job.hpp"

#include <cmdgraph/asio.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <cstdio>
#include <istream>
#include <optional>
#include <string>
#include <vector>

using namespace cmdgraph;
namespace asio = boost::asio;
using asio::awaitable;
using asio::use_awaitable;
using asio::ip::tcp;

namespace {

// Reads one line; an empty optional at the end of the stream.
awaitable<std::optional<std::string>> read_line(tcp::socket& socket, asio::streambuf& buffer) {
  try {
    co_await asio::async_read_until(socket, buffer, '\n', use_awaitable);
  } catch (const boost::system::system_error& e) {
    if (e.code() == asio::error::eof) co_return std::nullopt;
    throw;
  }
  std::istream in(&buffer);
  std::string line;
  std::getline(in, line);
  co_return line;
}

// One connection: a reply "<sum>\n" per request "<factor>\n" until the client hangs up.
awaitable<void> serve(tcp::socket socket, QueuePool& queues, std::size_t elements) {
  ScaleJob job(queues.device(), elements);
  asio::streambuf buffer;
  while (auto line = co_await read_line(socket, buffer)) {
    const std::int64_t factor = std::stoll(*line);
    // The io_context thread is free while the launch runs; it resumes here once it finished.
    co_await async_wait(job.launch(queues.acquire(Priority::normal), factor), use_awaitable);
    const std::string reply = std::to_string(job.sum()) + "\n";
    co_await asio::async_write(socket, asio::buffer(reply), use_awaitable);
  }
}

awaitable<void> listen(tcp::acceptor& acceptor, QueuePool& queues, std::size_t elements) {
  for (;;) {
    tcp::socket socket = co_await acceptor.async_accept(use_awaitable);
    asio::co_spawn(acceptor.get_executor(), serve(std::move(socket), queues, elements),
                   [](std::exception_ptr e) {
                     if (e) std::rethrow_exception(e);  // out of io_context::run()
                   });
  }
}

struct Results {
  std::size_t wrong = 0;
  std::vector<double> latencies_ms;
};

// A client: `requests` requests with factors of its own, each reply checked.
awaitable<void> client(tcp::endpoint server, int id, std::size_t requests, std::size_t elements,
                       Results& results) {
  tcp::socket socket(co_await asio::this_coro::executor);
  co_await socket.async_connect(server, use_awaitable);
  asio::streambuf buffer;
  const auto n = static_cast<std::int64_t>(elements);
  for (std::size_t r = 0; r < requests; ++r) {
    const std::int64_t factor = id * 1000 + static_cast<std::int64_t>(r);
    const std::string request = std::to_string(factor) + "\n";
    sample::Stopwatch watch;
    co_await asio::async_write(socket, asio::buffer(request), use_awaitable);
    const auto reply = co_await read_line(socket, buffer);
    results.latencies_ms.push_back(watch.ms());
    if (!reply || std::stoll(*reply) != factor * n * (n - 1) / 2) ++results.wrong;
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t clients = sample::flag(argc, argv, "--clients", 8);
  const std::size_t requests = sample::flag(argc, argv, "--requests", 50);
  const std::size_t elements = sample::flag(argc, argv, "--elements", 1 << 14);
  const std::size_t port = sample::flag(argc, argv, "--serve", 0);

  const Device device = Device::best();
  QueuePool queues(device, 2);
  asio::io_context io;  // run by this thread alone
  tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::address_v4::loopback(),
                                           static_cast<unsigned short>(port)));
  asio::co_spawn(io, listen(acceptor, queues, elements), asio::detached);
  if (port != 0) {
    std::printf("fence_server: serving on 127.0.0.1:%zu with %s; send \"<factor>\\n\"\n", port,
                device.name().c_str());
    std::fflush(stdout);  // a script waiting for this line may start its requests
    io.run();
    return 0;
  }

  Results results;
  std::size_t finished = 0;
  sample::Stopwatch watch;
  for (std::size_t c = 0; c < clients; ++c) {
    asio::co_spawn(io, client(acceptor.local_endpoint(), static_cast<int>(c), requests, elements,
                              results),
                   [&](std::exception_ptr e) {
                     if (e) std::rethrow_exception(e);
                     if (++finished == clients) io.stop();  // every client has its answers
                   });
  }
  io.run();
  const double total_ms = watch.ms();

  const std::size_t answered = results.latencies_ms.size();
  const bool ok = results.wrong == 0 && answered == clients * requests;
  std::printf("fence_server on %s (%s backend): %zu clients x %zu requests over TCP on one "
              "thread, %zu answered, %zu wrong; %.0f requests/s, latency p50 %.3f ms, "
              "p99 %.3f ms -> %s\n",
              device.name().c_str(), device.is_host() ? "host" : "CUDA", clients, requests,
              answered, results.wrong, 1000.0 * double(answered) / total_ms,
              sample::percentile(results.latencies_ms, 50),
              sample::percentile(results.latencies_ms, 99), ok ? "OK" : "FAILED");
  return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
