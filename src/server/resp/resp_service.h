// The Redis protocol (RESP2 and RESP3) on snowidd's optional RESP listener,
// so that any Redis client gets IDs by changing an address:
//   INCR tag, INCRBY tag n     the segment tag's next number (n consecutive
//                              numbers, the last returned, as Redis returns
//                              the new value), a RESP integer as Redis's;
//                              unknown tags follow segment_auto_create. A
//                              ticket-server store refuses n > 1 before
//                              taking any: its numbers step by its increment
//   SNOWID.ID, SNOWID.IDS n    Snowflake IDs as bulk strings of decimal digits
//                              (one; an array), never integers: JavaScript
//                              clients read integers into doubles
//   SNOWID.DECODE id           the ID's fields (a map in RESP3, a flat array in RESP2)
//   SNOWID.INFO                /v1/info's JSON, as a bulk string
//   SNOWID.BUSINESS tag [n]    the tag's business IDs (one; n, 1..max_batch)
//                              as an array of bulk strings, behind a token
//                              that opens the tag, as INCR
//   EXISTS tag…, TYPE, TTL, PTTL tag
//                              whether this node serves the tag (a fetch of it
//                              succeeded): EXISTS counts them, TYPE "string" or
//                              "none", TTL and PTTL -1 (never expires) or -2
//   MULTI, EXEC, DISCARD       Redis's transactions (resp_transaction.h): the
//                              commands are checked and queued, EXEC runs them;
//                              one refused while queuing makes EXEC answer
//                              EXECABORT and run none. UNWATCH: OK; WATCH refused
// and what clients send on their own: PING, ECHO, HELLO, AUTH (the bearer
// token as the password), CLIENT SETNAME (the agent, HTTP's rule) and the
// other CLIENT subcommands clients send at connect, SELECT 0, QUIT, COMMAND,
// INFO, CONFIG GET (no parameter is kept: it matches nothing). GET, SET, DECR,
// DEL, EXPIRE and their kin are refused with the reason and what to use
// instead; anything else: "-ERR unknown command" naming the served commands.
// The connection goes on after either. With a bearer token set, every command
// but AUTH, HELLO and QUIT answers -NOAUTH until the connection authenticated,
// and the request limits are Redis's for unauthenticated clients (10
// arguments, 16 KiB each). The commands' table is resp_commands.h.
#pragma once

#include <boost/asio/io_context.hpp>
#include <memory>

#include "listener.h"
#include "resp_options.h"
#include "service.h"

namespace snowid::server {

// The RESP listener for `options`; its endpoint is set.
std::unique_ptr<Listener> make_resp_listener(boost::asio::io_context& acceptor_io,
                                             IdService& service, const RespOptions& options);

}  // namespace snowid::server
