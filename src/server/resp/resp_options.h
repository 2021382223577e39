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
};

OptionRows<RespOptions> resp_rows();

// Ok unless the listener's limits are unusable.
Status check_resp_options(const RespOptions& options);

}  // namespace snowid::server
