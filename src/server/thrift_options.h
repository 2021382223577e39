// snowidd's Thrift listener options (Twitter Snowflake's service,
// thrift_service.h) and their rows in the option table.
#pragma once

#include "option_rows.h"
#include "stream_listener_options.h"

namespace snowid::server {

struct ThriftOptions {
  // thrift_max_frame_bytes is listener.max_pending_bytes: a framed call of
  // Twitter's service is a few dozen bytes.
  StreamListenerOptions listener{std::nullopt, 1000, std::chrono::milliseconds{300000}, 64 * 1024};
  // Serve Thrift on a non-loopback address although a bearer token is set
  // (Twitter's protocol carries none, so Thrift callers are not checked).
  bool insecure = false;
};

inline constexpr StreamListenerOptionNames kThriftOptionNames{
    "thrift", "thrift_max_connections", "thrift_idle_timeout_ms", "thrift_max_frame_bytes"};

OptionRows<ThriftOptions> thrift_rows();

// Ok unless the listener's limits are unusable, or it would serve a
// non-loopback address without a token check (`token_set`) and without
// thrift_insecure.
Status check_thrift_options(const ThriftOptions& options, bool token_set);

}  // namespace snowid::server
