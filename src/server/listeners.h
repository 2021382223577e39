// The list of listeners snowidd serves: which protocols the configuration
// turns on, their connection limits, their own option checks, the addresses
// they advertise before they bind, and how each is made. It sits above the
// protocol folders (beside main.cc), the one place that knows them all, so
// that a new protocol is its own folder plus one entry in listeners.cc.
#pragma once

#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "config.h"
#include "listener.h"
#include "service.h"

namespace snowid::server {

// Every listener `config` turns on, in start order. `main_io` is the main
// thread's io_context (signals, timers, HTTP's acceptor).
std::vector<std::unique_ptr<Listener>> make_listeners(boost::asio::io_context& main_io,
                                                      IdService& service,
                                                      const ServerConfig& config);

// The connection limit each listener `config` turns on wants, by protocol,
// for plan_descriptors().
std::vector<std::pair<std::string, std::int64_t>> wanted_connections(const ServerConfig& config);

// Each listener's own checks of its options (resolve_config() asks them).
Status check_listener_options(const ServerConfig& config);

// "<protocol> <address>" of each listener `config` turns on, at its
// configured address: what a claim publishes before the listeners bind.
std::vector<std::string> configured_addresses(const ServerConfig& config);

// (protocol, configured address) of each listener `config` turns on: what
// /v1/info lists until each has bound.
std::vector<std::pair<std::string, std::string>> configured_endpoints(const ServerConfig& config);

}  // namespace snowid::server
