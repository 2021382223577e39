#include "connection_workers.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace snowid::server {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

// How long the acceptor waits after a failed accept() before the next.
constexpr std::chrono::milliseconds kAcceptRetryPeriod{100};

}  // namespace

void Worker::sweep() {
  const SteadyTime now = std::chrono::steady_clock::now();
  const bool drain = draining.load(std::memory_order_relaxed);
  for (Connection* connection : connections) {
    if (now >= connection->deadline()) {
      connection->expire();
    } else if (drain) {
      connection->drain();
    }
  }
}

void Worker::sweep_every_period() {
  sweeper.expires_after(kSweepPeriod);
  sweeper.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;
    sweep();
    sweep_every_period();
  });
}

void WorkerPool::start(int threads, asio::thread_pool* waiters) {
  for (int i = 0; i < threads; ++i) {
    auto& worker = workers_.emplace_back(std::make_unique<Worker>());
    worker->waiters = waiters;
    worker->sweep_every_period();
    worker->thread = std::thread([&io = worker->io] { io.run(); });
  }
}

void WorkerPool::drain() {
  for (auto& worker : workers_) {
    worker->draining = true;
    asio::post(worker->io, [w = worker.get()] { w->sweep(); });
  }
}

void WorkerPool::stop() {
  for (auto& worker : workers_) {
    worker->work.reset();
    worker->io.stop();
  }
  for (auto& worker : workers_) {
    if (worker->thread.joinable()) worker->thread.join();
  }
}

TcpAcceptor::TcpAcceptor(asio::io_context& io, std::string name, WorkerPool& workers, Admit admit)
    : name_(std::move(name)),
      workers_(workers),
      admit_(std::move(admit)),
      acceptor_(io),
      retry_(io) {}

Result<std::uint16_t> TcpAcceptor::listen(const Endpoint& wanted) {
  boost::system::error_code ec;
  const auto address = asio::ip::make_address(wanted.host, ec);
  if (ec) return invalid_argument(fmt::format("{}: '{}' is not an IP address", name_, wanted.host));
  const tcp::endpoint endpoint(address, wanted.port);
  acceptor_.open(endpoint.protocol(), ec);
  if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(endpoint, ec);
  if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    // The configured address cannot be used (in use, not ours): bad input, exit 2.
    return invalid_argument(
        fmt::format("{}: cannot listen on {}: {}", name_, wanted.text(), ec.message()));
  }
  return acceptor_.local_endpoint().port();
}

void TcpAcceptor::close() {
  asio::post(acceptor_.get_executor(), [self = shared_from_this()] {
    boost::system::error_code ignored;
    self->acceptor_.close(ignored);
    self->retry_.cancel();
  });
}

void TcpAcceptor::accept() {
  Worker& worker = workers_.next();
  acceptor_.async_accept(worker.io, [self = shared_from_this(), &worker](
                                        boost::system::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !self->acceptor_.is_open()) return;
    if (ec) return self->accept_later(ec);
    self->failing_ = false;
    self->admit_(std::move(socket), worker);
    self->accept();
  });
}

// accept() failed, most likely for want of file descriptors (something
// other than this listener's connections holds them). The connection stays
// queued, so accepting again at once fails again at once, a loop that would
// keep the acceptor's thread busy; instead, try again a little later.
void TcpAcceptor::accept_later(const boost::system::error_code& ec) {
  if (!failing_) {
    spdlog::warn("{}: cannot accept a connection: {}; retrying every {} ms", name_, ec.message(),
                 kAcceptRetryPeriod.count());
  }
  failing_ = true;
  retry_.expires_after(kAcceptRetryPeriod);
  retry_.async_wait([self = shared_from_this()](const boost::system::error_code& error) {
    if (!error && self->acceptor_.is_open()) self->accept();
  });
}

}  // namespace snowid::server
