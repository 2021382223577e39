// Options every optional request/response listener over plain TCP (Thrift,
// RESP) has, and the rows that declare them under the listener's own prefix.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "endpoint.h"
#include "option_rows.h"

namespace snowid::server {

struct StreamListenerOptions {
  std::optional<Endpoint> endpoint;  // nullopt: the listener is off
  int max_connections = 1000;
  // A connection with no request under way is closed after this long;
  // 0: never (clients that pool connections keep them open).
  std::chrono::milliseconds idle_timeout{300000};
  // Bytes one connection may have received but not yet had answered: a
  // request larger than this closes the connection.
  std::uint32_t max_pending_bytes = 1 << 20;
  // With a bearer token set: a connection that has not authenticated this
  // long after it opened is closed (stream_server.h).
  std::chrono::milliseconds auth_timeout{5000};
  // The fraction of max_connections (as the open-file limit allows) that
  // connections not yet authenticated may hold at once; at least one.
  double unauthenticated_share = 0.1;
  // Client networks whose connections count as authenticated from the
  // start (trusted_networks.h): comma-separated CIDR; "" none.
  std::string trusted_networks;
  // TLS on this listener with the node's tls_cert and tls_key (as HTTP and
  // gRPC); a plain-text client is then refused at its handshake.
  bool tls = false;
};

// The names of one listener's rows, all under the listener's name:
// {"thrift", "thrift_max_connections", "thrift_idle_timeout_ms",
// "thrift_max_frame_bytes", …} for StreamListenerOptionNames("thrift",
// "max_frame_bytes").
struct StreamListenerOptionNames {
  // `pending_bytes`: what the listener calls max_pending_bytes.
  StreamListenerOptionNames(const std::string& listener, const std::string& pending_bytes)
      : endpoint(listener),
        max_connections(listener + "_max_connections"),
        idle_timeout(listener + "_idle_timeout_ms"),
        max_pending_bytes(listener + "_" + pending_bytes),
        auth_timeout(listener + "_auth_timeout_ms"),
        unauthenticated_share(listener + "_unauthenticated_share"),
        trusted_networks(listener + "_trusted_networks"),
        tls(listener + "_tls") {}

  std::string endpoint;
  std::string max_connections;
  std::string idle_timeout;
  std::string max_pending_bytes;
  std::string auth_timeout;
  std::string unauthenticated_share;
  std::string trusted_networks;
  std::string tls;
};

// Every row of a listener's StreamListenerOptions, under `names`; all but
// the endpoint apply only while the listener is on.
// The rows keep their names for the life of the process.
OptionRows<StreamListenerOptions> stream_listener_rows(StreamListenerOptionNames names,
                                                       std::uint32_t max_pending_bytes_bound);

// True for a loopback address (127.0.0.0/8, ::1): only this machine connects.
bool is_loopback(const std::string& host);

// kInvalidArgument naming `names` if the limits are unusable, or if TLS is
// asked for without a certificate (`tls_configured`: tls_cert and tls_key
// are set).
Status check_stream_listener(const StreamListenerOptions& options,
                             const StreamListenerOptionNames& names, bool tls_configured);

// How many of `max_connections` may be held by connections not yet
// authenticated: unauthenticated_share of them, at least 1.
std::int64_t unauthenticated_slots(const StreamListenerOptions& options,
                                   std::int64_t max_connections);

}  // namespace snowid::server
