// Twitter Snowflake's Thrift service (proto/thrift/snowflake.thrift) on
// snowidd's optional Thrift listener: framed transport, binary protocol, the
// calls answered through IdService like HTTP's and gRPC's (the agent rule,
// the per-agent counters, the audit log, the request metrics).
//
// Twitter's protocol carries no bearer token: Thrift callers are trusted as
// the listener's address allows (a loopback address, or thrift_insecure; see
// check_thrift_options()).
#pragma once

#include <boost/asio/io_context.hpp>
#include <memory>

#include "listener.h"
#include "service.h"

namespace snowid::server {

// The Thrift listener for config().thrift; its endpoint is set.
std::unique_ptr<Listener> make_thrift_listener(boost::asio::io_context& acceptor_io,
                                               IdService& service);

}  // namespace snowid::server
