// snowidd's Thrift listener options (Twitter Snowflake's service,
// thrift_service.h) and their rows in the option table.
#pragma once

#include "option_rows.h"
#include "stream_listener_options.h"

namespace snowid::server {

// The networks whose Thrift callers are trusted by default: this machine.
inline constexpr const char* kThriftDefaultTrustedNetworks = "127.0.0.0/8, ::1/128";

struct ThriftOptions {
  // thrift_max_frame_bytes is listener.max_pending_bytes: a framed call of
  // Twitter's service is a few dozen bytes. Clients built for Twitter's
  // service cannot send a token: callers on this machine are trusted.
  StreamListenerOptions listener{std::nullopt,
                                 1000,
                                 std::chrono::milliseconds{300000},
                                 64 * 1024,
                                 std::chrono::milliseconds{5000},
                                 0.1,
                                 kThriftDefaultTrustedNetworks};
};

OptionRows<ThriftOptions> thrift_rows();

// Ok unless the listener's limits are unusable, or it asks for TLS without
// a certificate (`tls_configured`: tls_cert and tls_key are set).
Status check_thrift_options(const ThriftOptions& options, bool tls_configured);

}  // namespace snowid::server
