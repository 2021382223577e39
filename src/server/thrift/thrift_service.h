// Twitter Snowflake's Thrift service (proto/thrift/snowflake.thrift) on
// snowidd's optional Thrift listener: framed transport, binary protocol, the
// calls answered through IdService like HTTP's and gRPC's (the agent rule,
// the per-agent counters, the audit log, the request metrics).
//
// Authentication: Twitter's calls carry no bearer token. With a token
// required, a connection from thrift_trusted_networks (this machine by default)
// is trusted, so clients built for Twitter's service work from there; any
// other connection first calls snowid's authenticate(token) (a method added
// to the IDL, which a client generated from proto/thrift/snowflake.thrift can
// call), and every other call before it is refused. With tokens_file, each
// call is checked against the tokens in force then (access_tokens.h):
// get_id needs a token that opens Snowflake IDs. Connections that do
// neither hold only thrift_unauthenticated_share of the slots and are closed
// after thrift_auth_timeout_ms (stream_server.h); one whose first call is
// authenticate is the last to make room for a new one.
#pragma once

#include <boost/asio/io_context.hpp>
#include <memory>
#include <optional>
#include <string_view>

#include "listener.h"
#include "service.h"
#include "thrift_options.h"

namespace snowid::server {

// Whether the first call in `bytes`, the start of a connection's input
// (which may end anywhere), is authenticate: its frame's method name, in
// the binary protocol's strict or old message header; nullopt until the name
// has arrived whole.
std::optional<bool> thrift_first_call_authenticates(std::string_view bytes);

// The Thrift listener for `thrift`; its endpoint is set.
std::unique_ptr<Listener> make_thrift_listener(boost::asio::io_context& acceptor_io,
                                               IdService& service, const ThriftOptions& thrift);

}  // namespace snowid::server
