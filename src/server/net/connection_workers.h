// What snowidd's TCP listeners (HTTP, Thrift, RESP) share: connection
// threads that each run an io_context of their own and time out the
// connections on them, and an acceptor that hands each new connection to one
// of them.
//
// Threading: a connection lives on one worker's thread alone, so serving it
// takes no lock and no cross-thread hand-off. The acceptor runs on the
// io_context it was made with (snowidd's main thread).
#pragma once

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <functional>
#include <list>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "endpoint.h"
#include "snowid/error.h"

namespace snowid::server {

using SteadyTime = std::chrono::steady_clock::time_point;

// How often a connection thread looks for connections past their deadline.
// Timeouts fire up to this much late; in exchange, moving a deadline is a
// plain store, not a timer operation on every request.
inline constexpr std::chrono::milliseconds kSweepPeriod{200};

// What a connection thread needs to know of a connection to time it out.
class Connection {
 public:
  virtual ~Connection() = default;
  // Closes the socket now; pending operations end with an error.
  virtual void close() = 0;
  // Its deadline passed (the sweeper calls this): closes it.
  virtual void expire() { close(); }
  // While the listener drains (SIGTERM), at every sweep: an idle connection
  // is closed; a busy one finishes its request.
  virtual void drain() {
    if (idle()) close();
  }
  // The connection must make progress (a request's next bytes, or the
  // answer's) by this time.
  SteadyTime deadline() const { return deadline_; }
  // True while waiting for the first byte of a request, nothing to write.
  bool idle() const { return idle_; }

 protected:
  SteadyTime deadline_ = SteadyTime::max();
  bool idle_ = false;
};

// A connection thread: an io_context of its own and the connections on it.
// Everything here but `draining` is touched only from `thread`.
struct Worker {
  // Declared before `io`, so the list outlives connections destroyed with it.
  std::list<Connection*> connections;
  boost::asio::io_context io{1};
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work{io.get_executor()};
  boost::asio::steady_timer sweeper{io};
  std::atomic<bool> draining{false};
  std::thread thread;
  // Where requests that may wait for the clock run, so that this thread
  // keeps serving its other connections (the listener's, shared by its
  // workers); null if none may wait.
  boost::asio::thread_pool* waiters = nullptr;

  // Expires connections past their deadline and, while draining, drains the
  // others (Connection::drain).
  // close() only cancels operations; connections leave the list later, from
  // their own handlers, so iterating here is safe.
  void sweep();
  void sweep_every_period();
};

// The connection threads of one listener.
class WorkerPool {
 public:
  ~WorkerPool() { stop(); }
  // Starts `threads` workers; `waiters` as Worker::waiters.
  void start(int threads, boost::asio::thread_pool* waiters);
  // The next worker in turn, for a new connection; start() was called.
  Worker& next() { return *workers_[next_++ % workers_.size()]; }
  // On SIGTERM: closes idle connections now and each busy one once its
  // request is answered.
  void drain();
  // Stops the threads (closing what is still open) and joins them.
  void stop();

 private:
  std::vector<std::unique_ptr<Worker>> workers_;
  std::size_t next_ = 0;
};

// Accepts TCP connections on one address and hands each to the next worker
// of a pool through `admit` (called on the acceptor's thread, which decides
// whether to serve or refuse it).
class TcpAcceptor : public std::enable_shared_from_this<TcpAcceptor> {
 public:
  using Admit = std::function<void(boost::asio::ip::tcp::socket, Worker&)>;
  // `name` ("http", "thrift", …) starts the log lines and errors.
  TcpAcceptor(boost::asio::io_context& io, std::string name, WorkerPool& workers, Admit admit);

  // Binds and listens on `endpoint`; returns the port bound. kInvalidArgument
  // if the host is not an IP address or the address cannot be used (in use,
  // not this machine's).
  Result<std::uint16_t> listen(const Endpoint& endpoint);
  // Starts accepting; listen() succeeded.
  void start() { accept(); }
  // Stops accepting (from any thread).
  void close();

 private:
  void accept();
  void accept_later(const boost::system::error_code& ec);

  std::string name_;
  WorkerPool& workers_;
  Admit admit_;
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::steady_timer retry_;
  bool failing_ = false;  // the last accept() failed; logged once per streak
};

}  // namespace snowid::server
