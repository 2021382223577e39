// A snowidd started by a test on free loopback ports (HTTP and gRPC) with a temporary state
// directory, and plain-socket HTTP for talking to it, malformed requests
// included. The process is killed (SIGKILL) if still running at destruction.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "raw_socket.h"

namespace snowid::test {

class ServerProcess {
 public:
  // Starts `binary` with `args` (plus --http 127.0.0.1:0 and --grpc
  // 127.0.0.1:0 unless `args` names those listeners) and waits until it
  // logs the port it listens on (40 s at most: a cluster node first waits
  // out its takeover floor, 12 s with the default lease). `env` adds
  // environment variables (or replaces inherited ones).
  ServerProcess(const std::string& binary, std::vector<std::string> args,
                const std::map<std::string, std::string>& env = {});
  ~ServerProcess();
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  bool started() const { return port_ != 0; }
  int port() const { return port_; }  // HTTP
  int grpc_port() const { return grpc_port_; }  // 0: gRPC is off
  // The port the listener `name` ("thrift", "resp") is bound to, from the
  // startup line; 0 if the log names none.
  int listener_port(const std::string& name) const;
  pid_t pid() const { return pid_; }
  std::string log() const;  // stdout and stderr so far

  void signal(int sig);
  // Waits for the process to end; returns its exit code, or -signal.
  int wait(std::chrono::seconds limit = std::chrono::seconds{10});

 private:
  pid_t pid_ = -1;
  int port_ = 0;
  int grpc_port_ = 0;
  std::string log_path_;
  bool reaped_ = false;
  int wait_status_ = 0;  // from waitpid, once reaped_
};

// The decimal digits right after the first `marker` in `text`; "" if none.
std::string digits_after(const std::string& text, const std::string& marker);

struct HttpReply {
  int status = 0;  // 0: no response (connection closed or timed out)
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
};

// Parses one response from the start of `data` (framed by Content-Length,
// which snowidd always sends) into `reply`; returns the bytes it used, 0 if
// `data` does not hold a whole response yet. `without_content`: the answer
// to a HEAD, whose header fields describe a body that is not sent.
std::size_t parse_http_response(const std::string& data, HttpReply& reply,
                                bool without_content = false);

// Sends raw bytes on a new connection and reads one response.
HttpReply http_raw(int port, const std::string& bytes,
                   std::chrono::milliseconds timeout = std::chrono::milliseconds{5000});
// GET `target` with optional extra header lines ("Name: value").
HttpReply http_get(int port, const std::string& target,
                   const std::vector<std::string>& headers = {});

// A kept-alive client connection.
class HttpConnection {
 public:
  explicit HttpConnection(int port);
  ~HttpConnection();
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;
  bool send(const std::string& bytes);
  // Reads the next response; status 0 if the server closed or timed out.
  HttpReply read(std::chrono::milliseconds timeout = std::chrono::milliseconds{5000});
  // Reads the next response as the answer to a HEAD: header fields only.
  HttpReply read_head(std::chrono::milliseconds timeout = std::chrono::milliseconds{5000});
  // True if the server closed the connection within `timeout`.
  bool closed_by_peer(std::chrono::milliseconds timeout);

 private:
  HttpReply read_one(std::chrono::milliseconds timeout, bool without_content);

  RawSocket connection_;
};

}  // namespace snowid::test
