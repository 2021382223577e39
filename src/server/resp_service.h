// The Redis protocol (RESP2 and RESP3) on snowidd's optional RESP listener,
// so that any Redis client gets IDs by changing an address:
//   INCR tag, INCRBY tag n     the segment tag's next number (n consecutive
//                              numbers, the last returned, as Redis returns
//                              the new value); unknown tags follow
//                              segment_auto_create
//   SNOWID.ID, SNOWID.IDS n    Snowflake IDs (an integer; an array)
//   SNOWID.DECODE id           the ID's fields (a map in RESP3, a flat array in RESP2)
//   SNOWID.INFO                /v1/info's JSON, as a bulk string
// and what clients send on their own: PING, ECHO, HELLO, AUTH (the bearer
// token as the password), CLIENT SETNAME (the agent, HTTP's rule) and the
// other CLIENT subcommands clients send at connect, SELECT 0, QUIT, COMMAND,
// INFO, CONFIG GET (no parameter is kept: it matches nothing). Anything else: "-ERR unknown
// command", and the connection goes on. With a bearer token set, every command but AUTH, HELLO and
// QUIT answers -NOAUTH until the connection authenticated, and the request limits are Redis's for
// unauthenticated clients (10 arguments, 16 KiB each).
#pragma once

#include <boost/asio/io_context.hpp>
#include <memory>

#include "listener.h"
#include "service.h"

namespace snowid::server {

// The RESP listener for config().resp; its endpoint is set.
std::unique_ptr<Listener> make_resp_listener(boost::asio::io_context& acceptor_io,
                                             IdService& service);

}  // namespace snowid::server
