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
};

// The names of one listener's rows, e.g. {"thrift", "thrift_max_connections",
// "thrift_idle_timeout_ms", "thrift_max_frame_bytes"}: string literals.
struct StreamListenerOptionNames {
  const char* endpoint;
  const char* max_connections;
  const char* idle_timeout;
  const char* max_pending_bytes;
};

// Every row of a listener's StreamListenerOptions, under `names`; all but
// the endpoint apply only while the listener is on.
OptionRows<StreamListenerOptions> stream_listener_rows(const StreamListenerOptionNames& names,
                                                       std::uint32_t max_pending_bytes_bound);

// True for a loopback address (127.0.0.0/8, ::1): only this machine connects.
bool is_loopback(const std::string& host);

// kInvalidArgument naming `names` if the limits are unusable.
Status check_stream_listener(const StreamListenerOptions& options,
                             const StreamListenerOptionNames& names);

}  // namespace snowid::server
