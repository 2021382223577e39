// snowidd's RESP listener options (the Redis protocol, resp_service.h) and
// their rows in the option table.
#pragma once

#include <cstdint>

#include "option_rows.h"
#include "stream_listener_options.h"

namespace snowid::server {

struct RespOptions {
  // resp_max_pending_bytes is listener.max_pending_bytes: what one
  // connection may have sent without its answers read yet.
  StreamListenerOptions listener{std::nullopt,
                                 1000,
                                 std::chrono::milliseconds{300000},
                                 1 << 20,
                                 std::chrono::milliseconds{5000},
                                 0.1,
                                 ""};
  // One argument's length at most (a tag, an agent, a password).
  std::uint32_t max_bulk_bytes = 64 * 1024;
  // A command's arguments at most, the command's name included.
  std::uint32_t max_arguments = 1024;
  // Commands one MULTI may queue at most (resp_transaction.h).
  std::uint32_t max_queued_commands = 10'000;
  // Queued bytes (arguments and bookkeeping) the MULTI queues of all
  // connections may hold together.
  std::uint64_t max_queued_bytes = std::uint64_t{64} << 20;
};

OptionRows<RespOptions> resp_rows();

// Ok unless the listener's limits are unusable, or it asks for TLS without
// a certificate (`tls_configured`: tls_cert and tls_key are set).
Status check_resp_options(const RespOptions& options, bool tls_configured);

}  // namespace snowid::server
