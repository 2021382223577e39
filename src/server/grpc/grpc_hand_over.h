// What snowidd's gRPC listeners share: plain-text connections it accepts
// itself and hands to a grpc::Server (gRPC 1.51 has no connection limit of
// its own), and the TLS credentials of its certificate (tls_cert, tls_key).
#pragma once

#include <grpcpp/grpcpp.h>
#include <sys/types.h>

#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

#include "net_options.h"
#include "snowid/error.h"

namespace snowid::server {

// The service name both gRPC listeners report to gRPC's health service.
inline constexpr const char* kIdServiceName = "snowid.v1.IdService";

// The connections handed to one grpc::Server, at most `max` open at once. A
// connection handed over is gRPC's to close: each is kept as its descriptor
// and socket inode, and dropped once that descriptor no longer holds that
// socket. Not thread-safe: one thread hands over and sweeps.
class GrpcHandOver {
 public:
  explicit GrpcHandOver(std::size_t max) : max_(max) {}

  // Sweeps, then gives the accepted connection `fd` to `server` (no Nagle,
  // as gRPC's own accepted sockets), or closes it when `max` are open.
  // Whether it was handed over.
  bool hand_over(grpc::Server& server, int fd);
  // Drops the connections gRPC has closed; the number still open.
  std::size_t sweep();
  std::size_t open() const { return handed_.size(); }
  // A new `max` for connections handed over from now on.
  void set_max(std::size_t max) { max_ = max; }

 private:
  std::size_t max_;
  std::vector<std::pair<int, ino_t>> handed_;
};

// Server credentials for tls_cert and tls_key; kInvalidArgument naming the
// file that cannot be read.
Result<std::shared_ptr<grpc::ServerCredentials>> grpc_tls_credentials(const NetOptions& net);

}  // namespace snowid::server
